"""Pure planning for Dask I/O (no Dask import, no I/O): write ownership and read blocks."""

from .read_plan import auto_read_chunks, cut_axes, default_read_chunks
from .write_plan import (
    CUT_BYTES,
    AxisGroup,
    Pieces,
    SourcePiece,
    WritePlan,
    WritePlanSummary,
    WriteTask,
    make_write_plan,
    normalize_region,
)

__all__ = [
    "CUT_BYTES",
    "AxisGroup",
    "Pieces",
    "SourcePiece",
    "WritePlan",
    "WritePlanSummary",
    "WriteTask",
    "auto_read_chunks",
    "cut_axes",
    "default_read_chunks",
    "make_write_plan",
    "normalize_region",
]
