"""The request queue: DirectStorage's model on Linux and CUDA (seed ``000_…`` algorithm 2, seed ``001_…``).

Enqueue reads (a file range or a container chunk, into a NumPy array or GPU memory, optionally
compressed), enqueue fences, submit them in one batch, cancel by request or tag, and read each
request's status::

    q = headrace.Queue(device=0)                 # the read path: page cache or O_DIRECT, per request
    f = q.add_file("p.hrc")
    ids = q.enqueue_chunks(f, ds, frame=0, field="particles", destination=gpu_array)
    fence = q.enqueue_signal()
    q.submit()
    fence.wait_on_stream(consumer_stream)   # the consumer stream waits for the bytes
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headrace import _ext, probe
from headrace.settings import device_ordinal, queue_options

__all__ = ["Fence", "Queue", "RequestStatus", "destination_of"]


@dataclass(frozen=True)
class RequestStatus:
    """What became of one request; times in seconds: submit -> read issued (queue wait), read issued ->
    read done (I/O), read done -> bytes in place (transfer), and within transfer its copy to the GPU and
    its decoding (GPU times are its share, by bytes, of its batch's, from CUDA events)."""

    state: str
    message: str
    completion_index: int
    queue_wait_s: float
    io_s: float
    transfer_s: float
    h2d_s: float
    decode_s: float
    source: str  # where its stored bytes came from: page-cache, disk, pinned, buffered, cufile (none until read)

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")


def _dtype_of(array: Any) -> np.dtype | None:
    """The element type of a NumPy, CuPy or PyTorch array (None for a plain buffer)."""
    dtype = getattr(array, "dtype", None)
    if dtype is None:
        return None
    try:
        return np.dtype(str(dtype).removeprefix("torch."))
    except TypeError:
        return None


def destination_of(array: Any) -> tuple[int, int, str]:
    """(address, bytes, "host"|"device") of a writable C-contiguous NumPy array, a CUDA array or a
    headrace DeviceBuffer."""
    if isinstance(array, np.ndarray):
        if not (array.flags.c_contiguous and array.flags.writeable):
            raise _ext.UsageError("a host destination must be a writable C-contiguous NumPy array")
        return array.ctypes.data, array.nbytes, "host"
    if isinstance(array, _ext.DeviceBuffer):
        return array.pointer, array.size_bytes, "device"
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        raise _ext.UsageError(f"destination must be a NumPy array or expose __cuda_array_interface__, got {type(array)}")
    if interface.get("strides") not in (None, ()):
        expected = np.lib.stride_tricks.as_strided(np.empty(0, interface["typestr"]), interface["shape"]).strides
        if tuple(interface["strides"]) != tuple(expected):
            raise _ext.UsageError("a device destination must be C-contiguous")
    size = int(np.prod(interface["shape"])) * np.dtype(interface["typestr"]).itemsize
    return int(interface["data"][0]), size, "device"


class Fence:
    """Signalled once every request enqueued before it has finished (done, failed or cancelled)."""

    def __init__(self, queue: Queue, fence_id: int) -> None:
        self._queue, self.id = queue, fence_id

    def is_signaled(self) -> bool:
        return self._queue.native.is_signaled(self.id)

    def wait(self) -> None:
        """Blocks the host until the fence is signalled."""
        self._queue.native.wait(self.id)

    @property
    def event(self) -> int:
        """The CUevent (as an int) a consumer stream can wait on with cudaStreamWaitEvent; blocks until
        every earlier request is issued to the GPU (its reads are done)."""
        return self._queue.native.fence_event(self.id)

    def wait_on_stream(self, stream: int) -> None:
        """Makes a CUDA stream wait for the fence. Blocks the host until the fence's GPU work is issued
        (after :meth:`Queue.submit`); with ``stream_value_fences`` it returns at once, even before submit."""
        self._queue.native.wait_on_stream(self.id, int(stream))


class Queue:
    """A request queue on one set of files; see the module docstring.

    ``options``: a :class:`headrace.QueueOptions` (``headrace.queue_options(...)``); by default the
    documented defaults overridden by ``HEADRACE_<NAME>``. Any option or I/O knob may also be named
    (``headrace.Queue(device=0, staging_bytes=1 << 30, queue_depth=32)``); docs/settings.md lists them.

    ``backend="auto"`` (the default) is the read path: per request it asks the page cache
    (``cache_policy``: ``auto`` reads cached ranges buffered on ``threads`` workers and the rest with
    O_DIRECT through io_uring; ``bypass`` reads everything O_DIRECT; ``use`` everything buffered; ``keep``
    as ``auto``, but a file that fits half the memory the page cache may take is read buffered and stays
    cached, so its next pass is hot: :meth:`describe` says the choice per file). A host
    backend name (posix, direct, mmap, uring, ram) forces that backend for every request; ``cufile``
    reads GPU destinations with cuFile straight into GPU memory (GDS where nvidia-fs serves it, else its
    compatibility mode; :meth:`describe` says which). ``pin_files`` ("auto", "on"/True, "off"/False)
    page-locks each added file so GPU destinations are copied by DMA from the page cache; ``strict=True``
    turns every fallback into an error.
    """

    def __init__(self, options: Any = None, *, device: int | str | None = None, **named: Any) -> None:
        if device is not None:
            ordinal = device_ordinal(device)
            named["device"] = -1 if ordinal is None else ordinal
        self.options = queue_options(options, **named)
        self.device = None if self.options.device < 0 else self.options.device
        self._native: _ext.Queue | None = _ext.Queue(self.options)  # None once closed
        self._keep: dict[int, Any] = {}  # destinations of requests not known to be finished

    @property
    def native(self) -> _ext.Queue:
        """The native queue (what the engine's slot stream and a workload's session drive); UsageError once
        the queue is closed."""
        if self._native is None:
            raise _ext.UsageError("the queue is closed")
        return self._native

    def add_file(self, path: str | os.PathLike[str]) -> int:
        """The file's id: opened once per version of it (the same path, unchanged, gives the same id). Under
        ``cache_policy="auto"``, its uncached bytes are read as the probe kept for its file system found
        fastest through the engine (:func:`headrace.probe.cold_reads`; O_DIRECT where none was kept)."""
        path = os.fspath(path)
        policy, why = probe.cold_reads(path, self.options.cache_policy, self.options.backend)
        return self.native.add_file(path, policy, why)

    def close_file(self, file: int) -> None:
        """Closes (and unpins) a file once its requests' GPU copies have ended; UsageError while a
        request of it still waits for or does its read."""
        self.native.close_file(file)

    def close_path(self, path: str | os.PathLike[str]) -> int:
        """Closes every open version of the file as :meth:`close_file` does (its pages unlocked: evicting it
        then makes it cold); how many there were."""
        return self.native.close_path(os.fspath(path))

    def enqueue(self, file: int, offset: int, stored_size: int, destination: Any, *, codec: str = "none",
                checksum: int | None = None, priority: int = 0, tag: int = 0, label: str = "") -> int:
        """Reads ``stored_size`` bytes at ``offset`` of ``file``, decodes them with ``codec`` into
        ``destination`` (whose size is the raw size)."""
        address, size, kind = destination_of(destination)
        request = self.native.enqueue(file, offset, stored_size, size, address, kind=kind, codec=codec,
                                              checksum=checksum, priority=priority, tag=tag, label=label)
        self._keep[request] = destination
        return request

    def enqueue_chunks(self, file: int, dataset: Any, frame: int, field: str, destination: Any, *,
                       priority: int = 0, tag: int = 0, keep_alive: bool = True) -> list[int]:
        """Every chunk of ``field`` in ``frame`` of an open :class:`headrace.Dataset`, checksums verified.
        ``keep_alive=False``: the caller keeps ``destination`` alive until the requests finish (a streamer
        that owns its buffers), so the queue holds no reference per request."""
        address, size, kind = destination_of(destination)
        index = dataset.container.field_index(field)
        needed = dataset.element_count(frame, field) * dataset.container.fields[index].element_bytes
        expected = np.dtype(dataset.field(field).dtype)
        given = _dtype_of(destination)
        # Raw bytes are a fine destination; any other element type must be the field's, or its values
        # would be the field's bytes read as another type.
        if given is not None and given != expected and given.itemsize != 1:
            raise _ext.UsageError(f"destination of dtype {given} for frame {frame} field {field!r} of dtype {expected} "
                                  "(give an array of the field's dtype, or of bytes)")
        if size < needed:
            raise _ext.UsageError(f"destination of {size} bytes for frame {frame} field {field!r} of {needed} bytes")
        requests = self.native.enqueue_chunks(file, dataset.container, frame, index, address, kind=kind,
                                                      priority=priority, tag=tag)
        if keep_alive:
            for request in requests:
                self._keep[request] = destination
        return requests

    def enqueue_chunk_list(self, file: int, dataset: Any, frame: int, field: str, chunks: list[int], destination: Any, *,
                           priority: int = 0, tag: int = 0) -> list[int]:
        """Some chunks of ``field`` in ``frame`` (their positions among the frame's chunks), packed one after the
        other into ``destination`` in the order given, checksums verified (a rank's share of a frame)."""
        address, size, kind = destination_of(destination)
        index = dataset.container.field_index(field)
        _, first, count = dataset.container.frame_field(frame, index)
        outside = [c for c in chunks if not 0 <= c < count]
        if outside:
            raise _ext.UsageError(f"chunk {outside[0]} of frame {frame} field {field!r}: it has {count} chunks")
        raw_sizes = dataset.container.chunk_table()["raw_size"]
        sizes = [int(raw_sizes[first + c]) for c in chunks]
        if sum(sizes) > size:
            raise _ext.UsageError(f"destination of {size} bytes for {len(chunks)} chunks of frame {frame} field {field!r} "
                                  f"of {sum(sizes)} bytes")
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else np.zeros(0, np.int64)
        requests = self.native.enqueue_chunk_list(file, dataset.container, frame, index, [int(c) for c in chunks],
                                                          [address + int(o) for o in offsets], kind=kind, priority=priority,
                                                          tag=tag)
        for request in requests:
            self._keep[request] = destination
        return requests

    def enqueue_signal(self) -> Fence:
        return Fence(self, self.native.enqueue_signal())

    def submit(self) -> None:
        self.native.submit()

    def cancel(self, request: int) -> bool:
        """True when the request will never write its destination."""
        return self.native.cancel(request)

    def cancel_tag(self, tag: int) -> int:
        return self.native.cancel_tag(tag)

    def status(self, request: int) -> RequestStatus:
        status = RequestStatus(**self.native.status(request))
        if status.finished:
            self._keep.pop(request, None)
        return status

    def drain(self) -> None:
        """Waits until every submitted request has finished."""
        native = self.native
        native.drain()
        finished = [r for r, state in zip(self._keep, native.states(list(self._keep)))
                    if state in ("done", "failed", "cancelled", "retired")]
        for request in finished:
            del self._keep[request]

    def summarize(self, requests: list[int]) -> _ext.RequestSummary:
        """A set of requests summed up (``_ext.RequestSummary``): counts by state, the first failure
        (``raise_first_failure()`` raises it as its own type: ``ChecksumMismatchError``, ...), bytes by
        source (page cache, disk, pinned pages) and summed times."""
        return self.native.summarize(requests)

    def stats(self) -> _ext.QueueStats:
        """The queue's counters (``_ext.QueueStats``; bounded: no history)."""
        return self.native.stats()

    def flight_timeline(self) -> list[_ext.FlightRecord]:
        """The newest flights (up to 4096, oldest first; ``_ext.FlightRecord``): per flight its lane,
        requests, reads and bytes, and when it was dispatched, taken by its lane's finisher, landed,
        checked, issued to the GPU and done, in seconds since the queue was made."""
        return self.native.flight_timeline()

    def fallbacks(self) -> list[str]:
        """The fallbacks taken so far, each once (``strict=True`` makes each an error instead)."""
        return self.native.fallbacks()

    @property
    def pinned_host_bytes(self) -> int:
        """Page-locked host memory the queue holds: staging and page-locked files."""
        return self.native.pinned_host_bytes

    @property
    def device_bytes(self) -> int:
        """GPU memory the queue holds: the staging twin for decoding and the fence words."""
        return self.native.device_bytes

    @property
    def copy_stream(self) -> int:
        """The CUstream (as an int) the queue's H2D copies run on, 0 without a GPU. GPU decoding runs on two
        streams of its own that this one waits for at each fence: work ordered after a fence on it sees the
        decoded bytes."""
        return self.native.copy_stream

    def describe(self) -> str:
        return self.native.describe()

    def close(self) -> None:
        """Cancels what was not read yet, waits for the rest; the queue is unusable afterwards."""
        if self._native is not None:
            self._native = None  # the last reference: the C++ destructor cancels and waits
            self._keep.clear()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
