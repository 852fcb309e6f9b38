"""How a lake format (Delta Lake, Iceberg) stores Arrow types (:class:`StorageTypes`): the one
mapping both formats' targets, their schema evolution and their table layouts use."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..errors import TargetError

__all__ = ["StorageTypes"]

#: An unsigned integer type's values fit in the next wider signed type.
_WIDER: dict[pa.DataType, pa.DataType] = {
    pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.uint64(): pa.decimal128(20, 0),
}


@dataclass(frozen=True)


class StorageTypes:
    """How a lake format stores Arrow types. Both formats lack unsigned integers (widened to the
    next signed type the format has), large and view variants, precisions beyond microseconds,
    zones other than UTC and decimals beyond 38 digits; they differ in the rest, which the flags say."""

    store: str  # the format's name, for errors
    small_integers: bool  # int8 and int16 are stored as they are (else as int32)
    fixed_size_binary: bool  # fixed-size binary is stored as it is (else as binary)
    times: bool  # times are stored (as microseconds); else refused
    #: Types none of the rules name: kept when True (but durations and intervals are refused),
    #: refused when False (only the known primitives are kept).
    others: bool

    def of(self, arrow_type: pa.DataType, name: str) -> pa.DataType:
        """The Arrow type the format stores for column ``name`` of ``arrow_type``."""
        t = arrow_type
        if pa.types.is_dictionary(t):
            return self.of(t.value_type, name)
        if t in _WIDER:
            return self.of(_WIDER[t], name)
        if (pa.types.is_int8(t) or pa.types.is_int16(t)) and not self.small_integers:
            return pa.int32()
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return pa.string()
        if pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or (
                pa.types.is_fixed_size_binary(t) and not self.fixed_size_binary):
            return pa.binary()
        if pa.types.is_float16(t):
            return pa.float32()
        if pa.types.is_date64(t):
            return pa.date32()
        if pa.types.is_timestamp(t):
            return pa.timestamp("us", tz="UTC" if t.tz else None)
        if pa.types.is_time(t) and self.times:
            return pa.time64("us")
        if pa.types.is_decimal(t):
            if t.precision > 38:
                raise TargetError(f"column {name}: {self.store} stores decimals of at most 38 digits, not {t}")
            return pa.decimal128(t.precision, t.scale)
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
            return pa.list_(self.of(t.value_type, name))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, self.of(f.type, f"{name}.{f.name}"), f.nullable) for f in t])
        if pa.types.is_map(t):
            return pa.map_(self.of(t.key_type, name), self.of(t.item_type, name))
        if self._kept(t):
            return t
        raise TargetError(f"column {name}: {self.store} has no type for Arrow {t} (exclude it with except_column_list)")

    def _kept(self, t: pa.DataType) -> bool:
        if self.others:
            return not (pa.types.is_time(t) or pa.types.is_duration(t) or pa.types.is_interval(t))
        return (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)
                or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t)
                or pa.types.is_date32(t))
