"""The processes of a parallel stream read (:mod:`.parallel_stream`) and the pipes to them.

The task forks the processes (:func:`~.decoding_process.decode_loop`) before it opens any
connection, sends each its pieces of WAL, and takes their outputs back in the order the pieces were
sent, whichever process finishes first; what is sent and not yet handed on is bounded.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final

from ..debezium.config import ConnectorConfig
from .decoding_process import DecodingProcessFailed, PieceEncoder, decode_loop

__all__ = ["PIECES_IN_FLIGHT", "DecodingPool"]

#: Pieces sent and not yet handed on, per process: bounds the memory between reader and writer.
#: Counted over all the processes, not each: outputs are taken in order, so a process ahead of the
#: others holds its outputs until theirs are taken, and the reader must keep sending meanwhile (the
#: walsender waits whenever the reader does).
PIECES_IN_FLIGHT: Final = 4
_DONE: Final = "done"
_CLOSE: Final = "close"


class DecodingPool:
    """The processes, a pipe each way to each, and two threads per process: one sending its pieces
    (a pipe holds 64 KiB: a send waits until the process has read the piece, and the reader must not
    wait for one process while the other has nothing to do), one taking its results."""

    class Stopped(Exception):  # not an error: the pool's signal to the WAL reader's thread
        """Raised by :meth:`send` once the task stopped taking outputs (it failed, or its reading was
        abandoned): the dispatcher ends. Never leaves the reader's thread."""

    def __init__(self, config: ConnectorConfig, run_id: str, stream: int, processes: int,
                 encoder: PieceEncoder) -> None:
        context = multiprocessing.get_context("fork")
        self.size = processes
        self.inputs: list[queue.Queue[Any]] = []
        self.results: list[queue.Queue[Any]] = []
        self.counts: list[dict[str, Any]] = []
        self.order: queue.Queue[Any] = queue.Queue()  # the process each sent piece went to, in WAL order
        self.room = threading.Semaphore(PIECES_IN_FLIGHT * processes)
        self.stopped = threading.Event()  # the task stopped taking outputs
        self._processes: list[Any] = []
        self._threads: list[threading.Thread] = []
        for index in range(processes):
            piece_out, piece_in = context.Pipe(duplex=False)
            result_out, result_in = context.Pipe(duplex=False)
            process = context.Process(target=decode_loop, args=(piece_out, result_in, config, run_id, stream, encoder),
                                      name=f"sparkcdc-decode-{index}", daemon=True)
            process.start()
            piece_out.close()
            result_in.close()
            self._processes.append(process)
            self.inputs.append(queue.Queue())
            self.results.append(queue.Queue())
            for target, name, pipe in ((self._send_pieces, "pieces", piece_in), (self._take_results, "results", result_out)):
                thread = threading.Thread(target=target, args=(index, pipe), name=f"sparkcdc-decode-{name}-{index}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def send(self, index: int, piece: tuple[Any, ...]) -> None:
        while not self.room.acquire(timeout=0.2):
            if self.stopped.is_set():
                raise DecodingPool.Stopped
        self.inputs[index].put(piece)
        self.order.put(index)

    def finish(self) -> None:
        """No more pieces: each process sends its counts once its outputs are delivered, and ends."""
        for pieces in self.inputs:
            pieces.put(None)
        self.order.put(_DONE)

    def _answer(self, index: int, answer: Any) -> None:
        self.inputs[index].put(("answer", answer))

    def _send_pieces(self, index: int, pipe: Any) -> None:
        pieces = self.inputs[index]
        try:
            while True:
                piece = pieces.get()
                if piece is _CLOSE:
                    return
                pipe.send(piece)
        except OSError:
            return  # the process is gone: its results' thread reports it
        finally:
            pipe.close()

    def outputs(self, dispatch: Callable[[], None]) -> Iterator[tuple[Any, Callable[[Any], None], Any]]:
        """Each piece's ``(header, reply, last event)``, in the order the pieces were sent; then the
        processes' counts are in :attr:`counts`. ``dispatch`` (the WAL reader's loop, which sends
        the pieces) runs in a thread meanwhile."""
        thread = threading.Thread(target=dispatch, name="sparkcdc-wal-reader", daemon=True)
        thread.start()
        try:
            while True:
                index = self.order.get()
                if index == _DONE:
                    break
                if isinstance(index, BaseException):
                    raise index
                header, last = self._result(index)
                self.room.release()
                yield header, partial(self._answer, index), last
            self.counts = [self._result(index) for index in range(self.size)]
        finally:
            self.stopped.set()
            if not self.counts:
                self.kill()  # a failure or an abandoned read: the dispatcher may wait on a full pipe
            thread.join()

    def _result(self, index: int) -> Any:
        kind, value = self.results[index].get()
        if kind == "error":
            raise value
        return value

    def _take_results(self, index: int, pipe: Any) -> None:
        results = self.results[index]
        try:
            while True:
                message = pipe.recv()
                results.put(message)
                if message[0] in ("counts", "error"):
                    return
        except (EOFError, OSError) as exc:
            code = self._processes[index].exitcode
            results.put(("error", DecodingProcessFailed(f"decoding process {index} ended (exit code {code}) before its work: {exc!r}")))
        finally:
            pipe.close()

    def kill(self) -> None:
        for process in self._processes:
            if process.is_alive():
                process.kill()

    def close(self) -> None:
        if not self.counts:  # the read failed or was abandoned, maybe before its outputs were taken
            self.stopped.set()
            self.kill()
        for pieces in self.inputs:
            pieces.put(_CLOSE)  # its sending thread ends
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        for thread in self._threads:
            thread.join(timeout=10)


