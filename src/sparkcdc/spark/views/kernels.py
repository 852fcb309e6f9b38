"""Arrow counterparts of some codecs' Spark SQL conversions (:mod:`.expressions`).

Why: an initial snapshot's chunks reach ``apply_changes`` as Arrow blocks, and typing them with
the codecs' Spark SQL expressions makes the JVM turn every row into a Spark row and back into
Arrow for the executor that stages it: measured, most of the JVM's time in a snapshot apply
(docs/apply-path.md). Where an Arrow kernel gives the codec's value exactly, the executor types the
block itself and the rows never become JVM rows.

A kernel takes the codec's raw values (the block's column) and returns the typed ones. It must
give what the Spark SQL expression gives, or refuse: :class:`KernelRefused` names the column and
the value, and the caller types that batch with Spark SQL instead (``tests/spark/test_views.py``
compares both on the edge values of every type). A codec without a kernel (decimals, bytes,
ISO strings, nested conversions …) is typed by Spark SQL only.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ...debezium.types.temporal import TIMESTAMP_NEGATIVE_INFINITY_MICROS, TIMESTAMP_POSITIVE_INFINITY_MICROS
from .errors import TableViewError

__all__ = ["Kernel", "KernelRefused", "date_from_days", "identity", "micros_since_epoch_ntz", "millis_to_micros", "zoned_timestamp"]

#: A codec's Arrow kernel: the raw values and the column's name (for a refusal) -> the typed values.
Kernel = Callable[[pa.Array, str], pa.Array]

#: What the connector writes for a ZonedTimestamp of years 1 to 9999 (its converter's fast path and
#: Java's ISO format): ``YYYY-MM-DDTHH:MM:SS[.f…]Z`` with at most microseconds. Arrow's ISO-8601 cast
#: reads more forms; the kernel takes only this one and leaves the rest to Spark SQL.
_ZONED_LAYOUT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"
_TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")


class KernelRefused(TableViewError):
    """A value an Arrow kernel cannot type exactly as the codec's Spark SQL expression does."""

    #: Found in the message of the Spark job a refusing task failed (Spark wraps the exception).
    MARKER = "sparkcdc: an Arrow kernel refused a value"

    def __init__(self, column: str, value: object, why: str) -> None:
        super().__init__(f"{self.MARKER}: column {column}: value {value!r} {why}; Spark SQL types it instead")
        self.column = column


def identity(values: pa.Array, column: str) -> pa.Array:
    """A codec without a conversion: the raw value is the typed one."""
    return values


def zoned_timestamp(values: pa.Array, column: str) -> pa.Array:
    """ZonedTimestamp text -> TIMESTAMP (UTC), ``±infinity`` -> pgjdbc's sentinel instants (as
    :func:`.expressions.zoned_timestamp`)."""
    if values.null_count == len(values):
        return pa.nulls(len(values), _TIMESTAMP_UTC)
    special = pc.is_in(values, pa.array(["infinity", "-infinity"]))
    plain = values if not pc.any(special).as_py() else pc.if_else(special, pa.scalar(None, pa.string()), values)
    fitting = pc.match_substring_regex(plain, _ZONED_LAYOUT)
    if pc.sum(pc.invert(fitting)).as_py():  # a null stays null; a present value of another layout is refused
        wrong = pc.filter(plain, pc.invert(fitting))[0].as_py()
        raise KernelRefused(column, wrong, "is not in the layout the Arrow kernel reads")
    typed = plain.cast(_TIMESTAMP_UTC)
    if plain is values:
        return typed
    sentinels = pc.if_else(pc.equal(values, "infinity"), TIMESTAMP_POSITIVE_INFINITY_MICROS, TIMESTAMP_NEGATIVE_INFINITY_MICROS)
    return pc.if_else(special, sentinels.cast(pa.int64()).cast(_TIMESTAMP_UTC), typed)


def date_from_days(values: pa.Array, column: str) -> pa.Array:
    """Days since the epoch -> DATE (``date_from_unix_date``)."""
    return values.cast(pa.date32())


def millis_to_micros(values: pa.Array, column: str) -> pa.Array:
    """Milliseconds of a time of day -> microseconds (``CAST(raw AS BIGINT) * 1000``)."""
    return pc.multiply_checked(values.cast(pa.int64()), 1000)


def micros_since_epoch_ntz(values: pa.Array, column: str) -> pa.Array:
    """Microseconds since the epoch -> TIMESTAMP_NTZ (``timestampadd(MICROSECOND, raw, epoch)``)."""
    return values.cast(pa.int64()).cast(pa.timestamp("us"))
