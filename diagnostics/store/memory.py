"""Freed memory handed back to the system while a wide read converts, so its peak is one copy, not two.

The store's reads allocate through the C library (parts.py sets Arrow's pool to the system allocator), and glibc
keeps the pages of thousands of freed row-group buffers in its heap: converting a window column by column frees the
Arrow copy but the process still holds its pages while the pandas copy is made beside it. `malloc_trim` gives free
heap pages back (the remedy dask's documentation gives for "memory not released back to the OS"). It walks the heap,
tens of milliseconds a call, so it is called only once enough has been freed since the last call. A C library
without it (not glibc) makes this a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Any

TRIM_BYTES = 256 * 2**20  # freed since the last trim before the next


def _libc_trim() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None)
    except OSError:
        return None


_TRIM = _libc_trim()


class Trimmer:
    """Counts bytes let go of and gives the heap's free pages back each `every` bytes (safe from several threads)."""

    def __init__(self, *, every: int = TRIM_BYTES) -> None:
        self.every = every
        self.trims = 0
        self._freed = 0
        self._lock = threading.Lock()

    def freed(self, nbytes: int) -> None:
        with self._lock:
            self._freed += nbytes
            if self._freed < self.every:
                return
            self._freed = 0
        self.trim()

    def trim(self) -> None:
        if _TRIM is not None:
            _TRIM(0)
            self.trims += 1
