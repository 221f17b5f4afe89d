"""Reads every chunk of a container into host memory through one host backend, timed and checked:
the ``read`` and ``demo`` commands, and the lab's read cases (:mod:`headrace.bench.cases.read_backends`).

The bytes counted are the stored bytes; checksums are checked inside the timed region (overlapped
with the next window's reads), so a result is also a proof that the data arrived intact.
"""

from __future__ import annotations

from collections.abc import Callable

from headrace import _ext
from headrace.dataset import open as open_dataset
from headrace.measurement import Measurement, measure
from headrace.page_cache import CacheState
from headrace.settings import io_settings

__all__ = ["BACKENDS", "available_backends", "read_container"]

# The host backends (every I/O backend but cuFile's, which reads into GPU memory).
BACKENDS = tuple(name for name, reads_into_gpu in _ext.backends() if not reads_into_gpu)


def available_backends(path: str) -> dict[str, str | None]:
    """Each backend and why it cannot read ``path`` here (None when it can)."""
    return {kind: _ext.backend_unavailable_reason(kind, path) for kind in BACKENDS}


def read_container(path: str, backend: str, cache: CacheState, repeats: int = 1, window_bytes: int = 256 << 20,
                   verify: bool = True, progress=None, go_on: Callable[[int], bool] | None = None,
                   **options: object) -> Measurement:
    """Measures reading every chunk of ``path`` through ``backend`` opened with ``options``.

    ``progress(done_bytes)`` is called after each window; ``go_on`` as in ``measure``. A cold (or drop-all) repeat opens the backend
    anew: pages a mapping (mmap) or a preload holds survive a page-cache drop, so a reused backend would
    read from memory.
    """
    ds = open_dataset(path)
    opened: list = []

    def reopen() -> None:
        opened.clear()  # closes the previous backend (and unmaps) before the next opens
        opened.append(_ext.open_backend(backend, path, io_settings(**options)))

    def body() -> int:
        return _ext.scan_chunks(ds.container, opened[0], window_bytes=window_bytes, verify=verify,
                                progress=progress)["stored_bytes"]

    if cache == "hot":
        reopen()
    result = measure(f"read/{backend}", body, files=[path], cache=cache, repeats=repeats,
                     setup=reopen if cache != "hot" else None, go_on=go_on,
                     parameters={"backend": backend, "verify": verify})
    result.parameters["describe"] = opened[0].describe()
    return result
