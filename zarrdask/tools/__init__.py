"""Tools users reach for: chunk statistics, descriptions, ``verify`` (an fsck), ``migrate``
(v2 metadata to v3 in place) and ``copy`` (rechunk / re-shard / recompress / convert).
The CLI (``zarrdask.cli``) is a thin layer over these functions."""
