"""A target library's error (deltalake, pyiceberg, pyarrow's filesystems) as a :class:`TargetError`
that names what failed, with the library's message on one line (:func:`failing_as`, :func:`reason`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import TargetError

__all__ = ["failing_as", "reason"]

_BACKTRACE_LINE: Callable[[str], re.Match[str] | None] = re.compile(r"^\s*\d+: ").match


def reason(exc: BaseException) -> str:
    """An error's message on one line, without the Rust backtrace deltalake adds when
    ``RUST_BACKTRACE`` is set, and at most 1000 characters."""
    lines: list[str] = []
    for line in str(exc).splitlines():
        if _BACKTRACE_LINE(line):
            break
        if line.strip():
            lines.append(line.strip())
    text = " ".join(lines) or type(exc).__name__
    return text if len(text) <= 1000 else text[:1000] + "…"


@contextmanager


def failing_as(what: str) -> Iterator[None]:
    """A library's error in the block as a :class:`TargetError` "``what`` failed: reason"."""
    try:
        yield
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"{what} failed: {reason(exc)}") from exc
