"""Staged pieces of a misaligned Dask write: where the pieces of cut blocks wait for the
rest of their shard, in the target's store instead of worker memory.

A shard that straddles two rows of dask blocks can be written only once both are
computed, so without staging the pieces of one block row wait in memory for the next
(``Pieces.waiting_bytes`` of the write plan). A staged write's stage task, one per source
block (:func:`stage_block`, fused with a blockwise source), writes each of the block's
pieces (:func:`stage_piece`) below ``<array path>/.zarrdask-staging/<write id>/p/`` in
bands of about :data:`STAGED_BATCH` bytes and returns a small :class:`StagedPiece` per
write task; the write task reads the bands straight into its region (:func:`read_into`), writes its
shards, marks itself done and deletes the bands; the last task of the graph removes the
prefix (:func:`finish_staging`). A write task computed again after its result was lost with a
worker finds its pieces gone and its mark present, and skips (:class:`Written`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..errors import StoreError
from ..storage.base import Store
from ..storage.temporary import STAGING_DIR
from ..storage.transactional import in_session, merge_changes

__all__ = ["ROW_BYTES", "STAGED_BATCH", "STAGING_DIR", "BlockPieces", "StagedPiece", "Staging", "Written", "finish_staging",
           "read_into", "stage_block", "stage_piece", "staging_refusal"]

STAGED_BATCH = 8 * 2**20  # bytes per band of a staged piece, and per batch of requests reading them back
ROW_BYTES = 4096  # a piece's rows this long or longer are written as views of its block, not copied


def staging_refusal(dtype: np.dtype, store: Any) -> str | None:
    """Why the pieces of a write of ``dtype`` into ``store`` cannot be staged (None: they
    can): object values have no raw bytes, and a transactional session would take them in."""
    if dtype.hasobject:
        return f"writes the cut pieces as raw bytes, which a {dtype} array does not have"
    if in_session(store):
        return f"would write the cut pieces into the transactional session of {store.url}"
    return None


class Staging(NamedTuple):
    """Where the cut pieces of one write wait for their write tasks: keys below ``prefix``
    (``<array path>/.zarrdask-staging/<write id>``) of the target's ``store``."""

    store: Store
    prefix: str

    def piece_key(self, task: tuple[int, ...], block: tuple[int, ...]) -> str:
        """The key of the piece of source block ``block`` that write task ``task`` takes."""
        return "/".join([self.prefix, "p", *map(str, task), *map(str, block)])

    def done_key(self, index: tuple[int, ...]) -> str:
        """The key marking the write task at ``index`` as done (its pieces deleted)."""
        return "/".join([self.prefix, "done", *map(str, index or (0,))])


class StagedPiece(NamedTuple):
    """A piece written to the store by :func:`stage_piece`, in bands of ``rows`` rows (along
    its first axis) at ``<key>/0``, ``<key>/1``, ...; its shape and dtype."""

    key: str
    shape: tuple[int, ...]
    dtype: str
    rows: int

    def bands(self) -> list[tuple[str, slice]]:
        """(key, rows of the piece) of each band."""
        return [(f"{self.key}/{n}", slice(start, min(start + self.rows, self.shape[0])))
                for n, start in enumerate(range(0, self.shape[0], self.rows))]


def stage_piece(block: np.ndarray, slices: tuple[slice, ...], staging: Staging, key: str) -> StagedPiece:
    """One piece of a staged write: ``slices`` of ``block`` written to the staging store
    in bands of about :data:`STAGED_BATCH` bytes (see :class:`StagedPiece`), so the block
    can be freed and nothing waits in memory. One band at a time, so the stage task holds
    the block and at most one band's copy; a store that writes a value from parts gets the
    band's rows as views of the block, without a copy."""
    piece = np.asarray(block)[slices]
    staged = StagedPiece(key, piece.shape, piece.dtype.str, max(1, STAGED_BATCH // max(1, piece[:1].nbytes)))
    for band_key, rows in staged.bands():
        band = piece[rows]
        staging.store.set(band_key, _rows(band) if staging.store.writes_parts else _bytes(band))
    return staged


#: a stage task's part of the plan: its block's index, and (write task index, slices of the block) per task
BlockPieces = tuple[tuple[int, ...], list[tuple[tuple[int, ...], tuple[slice, ...]]]]


def stage_block(block: np.ndarray, pieces: BlockPieces, staging: Staging) -> dict[tuple[int, ...], StagedPiece]:
    """One stage task: every piece of one block (``pieces``: the block's index, and per
    write task that takes part of it, that task's index and the slices) staged with
    :func:`stage_piece`; returns each write task's :class:`StagedPiece`. Fused with a blockwise source, the task that makes a block
    stages it, so no block waits for another task or travels between workers."""
    index, tasks = pieces
    return {task: stage_piece(block, slices, staging, staging.piece_key(task, index)) for task, slices in tasks}


def _bytes(piece: np.ndarray) -> memoryview:
    """The bytes of ``piece`` in C order (a copy unless it is contiguous)."""
    return memoryview(np.ascontiguousarray(piece).reshape(-1)).cast("B")


def _rows(piece: np.ndarray) -> list[memoryview] | memoryview:
    """The bytes of ``piece`` in C order as a list of views of its rows, when its rows are
    contiguous and long enough (:data:`ROW_BYTES`) to write one by one; else as
    :func:`_bytes`."""
    if piece.ndim < 2 or piece.flags.c_contiguous or piece.strides[-1] != piece.itemsize \
            or piece.shape[-1] * piece.itemsize < ROW_BYTES:
        return _bytes(piece)
    return [memoryview(piece[index]).cast("B") for index in np.ndindex(*piece.shape[:-1])]


class Written(Exception):
    """A staged write task finds its pieces gone and itself marked done: it ran before (its
    result was lost with a worker and is being recomputed) and its shards are written."""


def read_into(out: np.ndarray, piece: StagedPiece, staging: Staging, index: tuple[int, ...]) -> None:
    """Read the bands of ``piece`` from the store into ``out`` (its place in the region),
    about :data:`STAGED_BATCH` bytes per batch of requests."""
    bands = piece.bands()
    per_batch = max(1, STAGED_BATCH // max(1, out[:piece.rows].nbytes))
    for first in range(0, len(bands), per_batch):
        batch = bands[first:first + per_batch]
        values = staging.store.get_many([k for k, _ in batch])
        for (key, rows), value in zip(batch, values):
            if value is None:
                if staging.store.exists(staging.done_key(index)):
                    raise Written
                raise StoreError(
                    f"the staged piece {key!r} of this write is missing from {staging.store.url}: it was deleted "
                    f"while the write ran (by another process, or a cleanup of {STAGING_DIR!r} directories). Run "
                    "the write again")
            out[rows] = np.frombuffer(value, dtype=piece.dtype).reshape(out[rows].shape)


def finish_staging(staging: Staging, results: list[Any]) -> Any:
    """The top task of a staged write: its changes merged, and the staging prefix (the
    done marks) removed."""
    merged = merge_changes(results)
    staging.store.delete_prefix(staging.prefix)
    return merged
