"""A column of a target table as the driver describes it to a target (:class:`TargetColumn`).

Its own module because two sides speak of it: the targets' protocol (:mod:`.targets.base`, whose
``prepare`` takes the columns) and schema evolution (:mod:`.evolution`, which plans a stored table
towards them and whose plan ``prepare`` returns); neither should have to import the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["TargetColumn"]


@dataclass(frozen=True)
class TargetColumn:
    """A column of the target table: its Arrow type, and its PostgreSQL type when the source knows it.

    ``attnum`` is the source column's identity (0: not known; see :mod:`sparkcdc.apply.evolution`);
    ``fill`` the value rows older than the column take when it is added to an existing target (as
    the target stores it; ``fill_known`` False: not known, the rows are read again); ``dropped``:
    the source dropped it in the batch being applied (the target keeps its values up to there)."""

    name: str
    arrow_type: pa.DataType
    pg_type: str | None = None
    nullable: bool = True
    attnum: int = 0
    fill: Any = None
    fill_known: bool = True
    dropped: bool = False
