"""headrace: stream time-varying scientific data from storage into GPU memory.

Open a container with :func:`open`, write one with :class:`Writer`; the command line is ``headrace``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from headrace import _ext, _gpu_ahead

# The headrace script's GPU context starts now, on a thread, while NumPy and the modules below load (120 ms that
# it otherwise waited for once they had); in any other program this does nothing.
_gpu_ahead.start_for_script()

from headrace._libraries import register_wheel_library_directories
from headrace.dataset import Dataset, Field, Frame, open
from headrace.engine import Engine, release_engines, shared_engine, shared_engines
from headrace.errors import BadDataError, Error, UsageError
from headrace.queue import Fence, Queue
from headrace.settings import io_settings, queue_options
from headrace.stream import FrameStream
from headrace.writer import FieldSpec, Writer

if TYPE_CHECKING:
    from headrace.workloads.streamlines import trace

__version__: str = _ext.__version__
QueueOptions = _ext.QueueOptions
Settings = _ext.Settings

register_wheel_library_directories(_ext.add_library_directory)

__all__ = [
    "BadDataError",
    "Dataset",
    "Engine",
    "Error",
    "Fence",
    "FrameStream",
    "Queue",
    "QueueOptions",
    "Settings",
    "Field",
    "FieldSpec",
    "Frame",
    "UsageError",
    "Writer",
    "__version__",
    "io_settings",
    "open",
    "queue_options",
    "release_engines",
    "shared_engine",
    "shared_engines",
    "trace",
]


def __getattr__(name: str) -> Any:
    """``headrace.trace`` loads the streamline workloads on first use, so ``import headrace`` does not."""
    if name == "trace":
        from headrace.workloads.streamlines import trace

        return trace
    raise AttributeError(f"module 'headrace' has no attribute {name!r}")
