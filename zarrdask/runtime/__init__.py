"""The runtime a read or write runs in: threads (``executor.py``), result and scratch
memory (``output.py``), the decoded-chunk cache (``cache.py``, ``held_shard.py``), file
locks (``locks.py``) and progress bars (``progress.py``)."""
