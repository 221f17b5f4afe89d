"""The frame streamer: play a container's frames into GPU (or host) memory through the request queue.

``prefetch`` frames are in flight at once (2: double buffering, 3: triple, the default; seed ``003_…``;
with two, a frame the disk must read waits for the frame before it to be handed out, so a series whose
frames are partly cached leaves the disk idle between them): each owns a
slot of buffers, and a frame's slot is refilled with the frame ``prefetch`` ahead once it is released.
Jumping (:meth:`FrameStream.seek`) cancels what is in flight and starts over at the new frame, so its
cost is one frame's read plus the prefetch, whatever the frame::

    for frame in ds.stream(fields=["particles"], device=0, prefetch=3):
        particles = cupy.from_dlpack(frame["particles"])   # no copy; waits on the frame's fence
        render(particles)
        frame.release(stream=cupy.cuda.get_current_stream().ptr)

The previous frame is released when the loop asks for the next one, unless released before.

Each field of a frame has :meth:`headrace.Dataset.read`'s natural shape: a grid ``(z, y, x)`` or
``(z, y, x, c)`` whatever its layout on disk, other fields ``(n, c)``. A grid stored in grid order (the
``linear`` layout) is a view of the slot; one stored in blocks or Hilbert partitions is put into grid
order when the field is first taken from the frame (on the GPU by a kernel on a stream of the
stream's own, which the field's DLPack and CUDA-array-interface hand-offs wait for; on the host by the
same map in C++). ``stored_order=True`` hands every field out as ``(n, c)`` elements exactly as stored
(padding included), a view of the slot in every layout.

Arrays taken from a frame (``numpy.asarray(frame[f])``, ``cupy.from_dlpack(frame[f])``, the CUDA array
interface) are views of its slot (or of its grid-order buffer), no copy. NumPy arrays can never show
another frame's values; GPU arrays can only after the caller said they may:

- released by the loop (the next frame asked for, the stream closed) while an array taken from it is
  still alive, the frame keeps its buffers for as long as one such array lives, and the stream goes on
  with fresh ones (on the host, buffers whose arrays are gone are reused), so
  ``frames = [numpy.asarray(f["x"]) for f in ds.stream(device="cpu")]`` holds every frame's own values;
- released by the caller (``frame.release()``, ``with frame:``) on the host, the same: a NumPy array
  taken before keeps the frame's buffers (and its values) for as long as it lives;
- released by the caller on a GPU, the caller says nothing reads its arrays any more (past ``stream``,
  for GPU work): the slot is refilled at once, the zero-copy loop above, and the frame's
  :class:`FieldArray` objects raise when touched after that. (A NumPy array of GPU data is a copy.)

The schedule (slots filled through the queue, a fence each, released, refilled, looked ahead) is the
engine's slot stream (``engine/slot_stream.hpp``), the same one the renderer and the tracer use; this
module declares what a slot holds (every chunk of the streamed fields of one frame) and wraps frames.

``follow=True`` plays a file as its publishing writer writes it (format 1.4, ``headrace.Writer(...,
publish=True)``; docs/format.md 6.1): past the last frame it knew, the stream waits for the writer to
publish more (reading the superblock again every ``follow_poll_s``) and hands each new frame out once, in
order; it ends where the writer closed the file, or where no writer holds the file any more and nothing new
was published. It has an engine of its own, which opens the file again as it grows and never page-locks it
(``pin_files="off"``: a page-locked mapping would end where the file ended when it was made).

Streams run on the process's engine for their device and options (:mod:`headrace.engine`): the queue,
its staging and decoders and the files it opened or page-locked are made once and shared, so opening a
stream again costs nothing but its slot buffers.
"""

from __future__ import annotations

import fcntl
import os
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from headrace import _ext
from headrace.arrays import field_shape, grid_layout
from headrace.engine import Engine, buffer_bytes, shared_engine
from headrace.errors import OutOfRangeError
from headrace.grid_layouts import GridLayout, LinearLayout
from headrace.queue import Fence, destination_of
from headrace.settings import device_ordinal

__all__ = ["FieldArray", "Frame", "FrameStats", "FrameStream"]

_DLPACK_CUDA = 2


class _Lease:
    """Held by every array taken from a frame (and by its FieldArrays): while one lives, the frame's
    buffers are not refilled by a release of the loop's. Holds the buffers (the slot's, and its GPU
    grid-order buffers), so they live as long."""

    __slots__ = ("buffers", "natural", "__weakref__")

    def __init__(self, buffers: dict[str, Any], natural: dict[str, Any]) -> None:
        self.buffers, self.natural = buffers, natural


class _HostView:
    """``numpy.asarray`` of it is a view of a host slot whose base holds the frame's lease."""

    def __init__(self, array: np.ndarray, lease: _Lease) -> None:
        self.__array_interface__ = array.__array_interface__
        self._array, self._lease = array, lease


class FieldArray:
    """One field of a delivered frame, in its natural shape (or ``(n, c)``): device memory that CuPy, PyTorch
    and Numba take without a copy (``__dlpack__``, ``__cuda_array_interface__``), or a NumPy array."""

    def __init__(self, frame: Frame, storage: Any, dtype: np.dtype, shape: tuple[int, ...], lease: _Lease,
                 ready: Any = None) -> None:
        # storage: a NumPy array (host) or a DeviceBuffer (GPU), whose first bytes hold the field.
        # ready: the event after which GPU storage holds it (a grid put into grid order); None: the frame's fence.
        self._frame, self._storage, self.dtype, self.shape, self._lease = frame, storage, dtype, shape, lease
        self._ready = ready

    def _wait(self) -> None:
        self._frame.wait() if self._ready is None else self._ready.synchronize()

    def _wait_on_stream(self, stream: int) -> None:
        self._frame.wait_on_stream(stream) if self._ready is None else self._ready.wait_on_stream(stream)

    def _producer_stream(self) -> int:
        return self._frame._stream._queue.copy_stream if self._ready is None else self._frame._stream._grid_stream().handle

    @property
    def on_gpu(self) -> bool:
        return not isinstance(self._storage, np.ndarray)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def numpy(self) -> np.ndarray:
        """The values on the host: a view of the slot for host data (see the module docstring for how
        long it holds them), a copy for GPU data (made after the frame's fence)."""
        self._frame._check_readable()
        if not self.on_gpu:
            return np.asarray(_HostView(self._storage, self._lease))
        self._wait()
        raw = self._storage.to_host(self.nbytes)
        return np.frombuffer(raw, dtype=self.dtype).reshape(self.shape)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if not self.on_gpu:
            raise AttributeError("host data: use __array__ or __dlpack__")
        self._frame._check_readable()  # a consumer keeps this object, and with it the lease
        stream = self._producer_stream()
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._storage.pointer, False),
                "version": 3, "strides": None, "stream": stream or None}

    def __dlpack__(self, stream: int | None = None, **kwargs: Any) -> Any:
        if not self.on_gpu:
            given: dict[str, Any] = {"stream": stream} if stream is not None else {}
            return self.numpy().__dlpack__(**given, **kwargs)
        self._frame._check_readable()
        # DLPack's contract: the data must be ready on the consumer's stream (None: the legacy default
        # stream, CU_STREAM_LEGACY = 1; -1: the consumer will not sync, so the host waits).
        if stream == -1:
            self._wait()
        else:
            self._wait_on_stream(1 if stream is None else stream)
        # A fresh capsule each time (a DLPack capsule is consumed once), owning the frame's lease.
        return self._storage.view(self.dtype.name, list(self.shape), self._frame._stream._gpu(), owner=self._lease)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.on_gpu:
            return (_DLPACK_CUDA, self._frame._stream._gpu())
        return self._storage.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self.numpy()
        if dtype is not None:
            return values.astype(dtype)
        return values.copy() if copy and not self.on_gpu else values

    def __repr__(self) -> str:
        where = f"cuda:{self._frame._stream.device}" if self.on_gpu else "host"
        return f"FieldArray({self.dtype.name}{list(self.shape)}, {where}, frame {self._frame.index})"


@dataclass
class FrameStats:
    """One delivered frame: bytes and where its time went (seconds)."""

    frame: int
    stored_bytes: int
    raw_bytes: int
    requests: int
    ready_s: float  # from its requests' submit to the frame being handed out
    consumer_wait_s: float  # how long the caller blocked for it in next()
    queue_wait_s: float  # summed over its requests: submit -> read issued
    io_s: float  # summed: read issued -> read done
    transfer_s: float  # summed: read done -> bytes in place (H2D, decode, waiting between them)
    h2d_s: float  # summed: copies to the GPU (CUDA events)
    decode_s: float  # summed: decoding (CPU, or nvCOMP by CUDA events)
    bytes_from_cache: int  # stored bytes served from memory (the page cache, page-locked pages, held copies)
    bytes_from_disk: int  # stored bytes read with O_DIRECT
    bytes_held: int  # of bytes_from_cache: DMA'd from the copy the engine held of an earlier read from the disk
    staging_waits: int  # dispatches of the engine's queue so far that found staging full


@dataclass
class _Slot:
    index: int  # the slot stream's slot
    buffers: dict[str, Any]  # field -> DeviceBuffer or NumPy array, sized for the largest frame
    frame: int = -1
    fence: Fence | None = None
    natural: dict[str, Any] = field(default_factory=dict)  # grid field -> its grid-order DeviceBuffer (GPU)


class _GridOrder:
    """How one grid field stored in units (blocks, Hilbert partitions) is put into grid order: the
    layout's dims and unit, and the stored place of each point of a unit (None: x fastest), which the
    GPU kernel reads from device memory (uploaded once)."""

    def __init__(self, layout: GridLayout) -> None:
        self.dims, self.unit = layout.dims, layout.unit
        ux, uy, uz = layout.unit
        z, y, x = np.meshgrid(np.arange(uz), np.arange(uy), np.arange(ux), indexing="ij")
        local = layout.positions(z, y, x).ravel()  # the first unit's points, x fastest
        self.local_order = None if np.array_equal(local, np.arange(local.size)) else local.astype(np.uint32)
        self._device_order: Any = None

    @property
    def points(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    def gather_host(self, stored: np.ndarray, natural: np.ndarray) -> None:
        """``natural`` (the grid's points, C order) from ``stored`` (the frame's elements)."""
        element_bytes = natural.itemsize * (natural.size // self.points)
        _ext.gather_grid_order_host(stored.reshape(-1).view(np.uint8), natural.reshape(-1).view(np.uint8), self.dims,
                                    self.unit, self.local_order, element_bytes)

    def gather_device(self, device: int, kernel: Any, stored: Any, natural: Any, element_bytes: int, stream: int) -> None:
        if self.local_order is not None and self._device_order is None:
            self._device_order = _ext.DeviceBuffer(device, self.local_order.nbytes)
            self._device_order.copy_from_host(self.local_order.view(np.uint8))
        order = 0 if self._device_order is None else self._device_order.pointer
        kernel.gather(stored.pointer, natural.pointer, self.dims, self.unit, order, element_bytes, stream)


class Frame:
    """A delivered frame: ``frame[field]`` is a :class:`FieldArray`; :meth:`release` returns its buffers."""

    def __init__(self, stream: FrameStream, slot: _Slot, stats: FrameStats) -> None:
        self._stream, self._slot, self.stats = stream, slot, stats
        self.index = slot.frame
        self.time = stream._dataset.frames[slot.frame].time
        self._arrays: dict[str, FieldArray] = {}
        self._lease: _Lease | None = _Lease(slot.buffers, slot.natural)
        self._gathers: list[Any] = []  # events of grid-order gathers still reading the slot
        self._kept: weakref.ref[_Lease] | None = None  # released by the loop while its arrays lived
        self.released = False

    def _held_lease(self) -> _Lease | None:
        return self._lease if self._lease is not None else (self._kept() if self._kept is not None else None)

    def _fence(self) -> Fence:
        """The fence of the frame's slot (set when the stream delivers a frame)."""
        fence = self._slot.fence
        if fence is None:
            raise _ext.UsageError(f"frame {self.index} has no fence: it was not delivered by a stream")
        return fence

    def _check_readable(self) -> None:
        if self._held_lease() is None:
            raise _ext.UsageError(f"frame {self.index} was released; its buffers hold another frame now (take the "
                                  "arrays you keep before releasing it, or copy them)")

    def __getitem__(self, name: str) -> FieldArray:
        """Field ``name`` of the frame in its natural shape (or stored order: see the module docstring)."""
        self._check_readable()
        lease = self._held_lease()
        assert lease is not None
        if name not in self._arrays:
            if name not in lease.buffers:
                raise _ext.UnknownNameError(f"field {name!r} is not streamed (fields: {', '.join(lease.buffers)})")
            self._arrays[name] = self._stream._field_array(self, name, lease)
        return self._arrays[name]

    @property
    def fields(self) -> list[str]:
        return list(self._slot.buffers)

    @property
    def event(self) -> int:
        """The CUevent that fires when every field of the frame is in place as stored (GPU streams); a grid
        taken in grid order from a blocked or Hilbert layout is ready after :meth:`wait_on_stream`."""
        return self._fence().event

    @property
    def stream(self) -> int:
        """The CUstream the frame's copies run on, which waits for its GPU decoding (on streams of the
        queue's own) before the frame's fence: after the frame is handed out, work on it sees the frame."""
        return self._stream._queue.copy_stream

    def wait(self) -> None:
        """Blocks the host until the frame's bytes are in place (and the fields taken so far in grid order)."""
        self._fence().wait()
        for gather in self._gathers:
            gather.synchronize()

    def wait_on_stream(self, stream: int) -> None:
        """Makes a CUDA stream wait for the frame (and the fields taken so far in grid order) without
        blocking the host."""
        self._fence().wait_on_stream(stream)
        for gather in self._gathers:
            gather.wait_on_stream(stream)

    def release(self, stream: int | None = None) -> None:
        """Gives the frame's buffers back for the next frame. ``stream``: the CUDA stream whose queued
        work still reads them (the queue waits for it before overwriting); None: nothing reads them any more."""
        if not self.released:
            self._stream._release(self, stream, by_caller=True)

    def __enter__(self) -> Frame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _release_by_loop(self) -> None:
        if not self.released:
            self._stream._release(self, None, by_caller=False)


def writer_holds(path: str) -> bool:
    """Whether a publishing writer holds the file now (its lock, docs/format.md 6.1)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # the shared lock, where it was taken, goes with it
    return False


class FrameStream:
    """Plays frames of a dataset through an engine's queue; see the module docstring.

    ``frames``: the frames to play, in order (default: every frame from ``start``), ``loop`` times.
    ``stored_order``: hand every field out as ``(n, c)`` elements as stored (default: grids in their
    natural ``(z, y, x[, c])`` shape, put into grid order when stored in blocks or Hilbert partitions).
    ``engine``: the :class:`headrace.Engine` to use; by default the process's engine for ``device`` and
    ``options`` (a :class:`headrace.QueueOptions`) and/or options and I/O knobs by name (``backend``,
    ``cache_policy``, ``pin_files``, ``staging_bytes``, ``decode_on``, ``queue_depth``, ...:
    docs/settings.md), made on first use and shared."""

    def __init__(self, dataset: Any, *, fields: Sequence[str] | None = None, device: int | str | None = None,
                 prefetch: int = 3, loop: int = 1, start: int = 0, frames: Sequence[int] | None = None,
                 engine: Engine | None = None, options: Any = None, stored_order: bool = False, follow: bool = False,
                 follow_poll_s: float = 0.05, **named: Any) -> None:
        self.follow, self.follow_poll_s = bool(follow), float(follow_poll_s)
        if prefetch < 1:
            raise _ext.UsageError(f"prefetch must be at least 1, got {prefetch}")
        if loop < 1:
            raise _ext.UsageError(f"loop must be at least 1, got {loop}")
        self._dataset = dataset
        self.stored_order = bool(stored_order)
        self._grid_orders: dict[str, _GridOrder] = {}
        self._grid_kernel: Any = None
        self._grid_cuda_stream: Any = None
        self.fields = list(fields) if fields else [f.name for f in dataset.fields]
        for name in self.fields:
            dataset.field(name)  # UsageError naming the fields there are
        if engine is not None and (options is not None or named):
            raise _ext.UsageError(f"give an engine or queue options, not both (got {', '.join(named) or 'options'})")
        if engine is not None:
            self._engine = engine
        elif self.follow:
            # An engine of its own: each time the file grows it is opened again (its readers know its size
            # at open), and never page-locked (a mapping would end where the file ended).
            self._engine = Engine(device_ordinal(device), options, **{"pin_files": "off", **named})
        else:
            self._engine = shared_engine(device, options, **named)
        self.device = self._engine.device
        self.prefetch, self.loop = int(prefetch), int(loop)
        self._queue = self._engine.queue
        self._file = self._engine.add_file(dataset.path)
        self._frame_bytes = _bytes_per_frame(dataset, self.fields)
        self._slots = [_Slot(i, self._allocate()) for i in range(self.prefetch)]
        destinations = [[destination_of(slot.buffers[name])[0] for name in self.fields] for slot in self._slots]
        self._native = self._slot_stream(dataset, destinations)
        self._current: Frame | None = None
        self._spares: list[dict[str, Any]] = []  # host buffers whose kept frame's arrays are gone
        self.kept_frames = 0  # frames released by the loop whose arrays kept their buffers
        self.history: list[FrameStats] = []
        if frames is not None:  # an order of its own (a rank's share of the series), ``loop`` times
            self.play([int(t) for t in frames] * self.loop)
        elif self.follow and start == len(dataset.frames):  # nothing published yet past start: wait for it
            self._native.play([])
        else:
            self.seek(start)

    def _slot_stream(self, dataset: Any, destinations: list[list[int]]) -> Any:
        """The engine's slot stream over the frames the dataset's index holds."""
        return _ext.FrameSlotStream(self._queue.native, dataset.container, self._file,
                                    [dataset.container.field_index(n) for n in self.fields], destinations,
                                    "host" if self.device is None else "device", tag=self._engine.new_tag())

    def _published_more(self) -> bool:
        """Following: waits past the last frame known for the writer to publish more; True once it did (the
        stream now plays them), False where the file is finished or its writer gone with nothing new."""
        known = len(self._dataset.frames)
        while True:
            fresh = type(self._dataset)(self._dataset.path)
            if len(fresh.frames) > known:
                self._adopt(fresh, range(known, len(fresh.frames)))
                return True
            if not fresh.growing or not writer_holds(fresh.path):
                return False
            time.sleep(self.follow_poll_s)

    def _adopt(self, dataset: Any, frames: Sequence[int]) -> None:
        """The stream over a newer index of the same file (every frame it knew unchanged), playing ``frames``;
        slots grown where a new frame is larger. Called with no frame handed out."""
        self._native.stop()
        self._engine.close_file(dataset.path)  # opened again at its new size
        self._file = self._engine.add_file(dataset.path)
        self._dataset = dataset
        self._frame_bytes = _bytes_per_frame(dataset, self.fields)
        needed = self._slot_sizes()
        for slot in self._slots:
            if any(buffer_bytes(_root(slot.buffers[name])) < needed[name] for name in self.fields):
                slot.buffers = self._allocate()
        destinations = [[destination_of(slot.buffers[name])[0] for name in self.fields] for slot in self._slots]
        self._native = self._slot_stream(dataset, destinations)
        self._native.play([int(t) for t in frames])

    def _slot_sizes(self) -> dict[str, int]:
        """Per field, the bytes of its largest frame."""
        sizes = {}
        for name in self.fields:
            info = self._dataset.field(name)
            largest = max((self._dataset.element_count(t, name) for t in range(len(self._dataset.frames))), default=0)
            sizes[name] = largest * info.components * np.dtype(info.dtype).itemsize
        return sizes

    def _allocate(self) -> dict[str, Any]:
        """A slot: per field a buffer for its largest frame, from the engine (spare ones of closed streams
        first). Host slots are NumPy arrays of the field's dtype viewing the engine's bytes."""
        buffers = {}
        for name, size in self._slot_sizes().items():
            info = self._dataset.field(name)
            buffer = self._engine.slot_buffer(max(size, 1))
            buffers[name] = buffer[:size].view(info.dtype) if self.device is None else buffer
        return buffers

    def _field_array(self, frame: Frame, name: str, lease: _Lease) -> FieldArray:
        """Field ``name`` of ``frame``: (n, c) elements, or a grid's natural shape (a view of the slot for
        grid order, else put into grid order here)."""
        dataset = self._dataset
        info = dataset.field(name)
        dtype, components = np.dtype(info.dtype), info.components
        elements = dataset.element_count(frame.index, name)
        shape = field_shape(dataset, frame.index, name, stored_order=self.stored_order)  # read()'s
        buffer = lease.buffers[name]
        on_host = isinstance(buffer, np.ndarray)
        layout = None if self.stored_order else grid_layout(dataset, frame.index, name)
        if layout is None or isinstance(layout, LinearLayout):  # the stored elements in read()'s order
            storage = buffer[: elements * components].reshape(shape) if on_host else buffer
            return FieldArray(frame, storage, dtype, shape, lease)
        order = self._grid_orders.get(name)
        if order is None:
            order = self._grid_orders[name] = _GridOrder(layout)
        if on_host:
            natural = np.empty(shape, dtype)
            order.gather_host(buffer[: elements * components], natural)
            return FieldArray(frame, natural, dtype, shape, lease)
        element_bytes = components * dtype.itemsize
        if name not in lease.natural:
            lease.natural[name] = self._engine.slot_buffer(order.points * element_bytes)
        stream = self._grid_stream()
        if self._grid_kernel is None:
            self._grid_kernel = _ext.GridOrderKernel(self._gpu())
        frame._fence().wait_on_stream(stream.handle)  # the stored elements are in place
        order.gather_device(self._gpu(), self._grid_kernel, buffer, lease.natural[name], element_bytes, stream.handle)
        ready = _ext.Event(self._gpu(), stream.handle)
        frame._gathers.append(ready)
        return FieldArray(frame, lease.natural[name], dtype, shape, lease, ready=ready)

    def _grid_stream(self) -> Any:
        """The CUDA stream grid-order gathers run on (made on first use)."""
        if self._grid_cuda_stream is None:
            self._grid_cuda_stream = _ext.CudaStream(self._gpu())
        return self._grid_cuda_stream

    def _gpu(self) -> int:
        """The GPU ordinal of a stream into GPU memory (its FieldArrays' device)."""
        if self.device is None:
            raise _ext.UsageError("a stream into host memory has no GPU")
        return self.device

    @property
    def engine(self) -> Engine:
        return self._engine

    def describe(self) -> str:
        return f"{self._queue.describe()} prefetch={self.prefetch}"

    # ---- scheduling: the engine's slot stream ----
    def seek(self, frame: int) -> None:
        """Restarts playback at ``frame``: cancels what is in flight, then prefetches from there."""
        frames = len(self._dataset.frames)
        self._check_frames([frame])
        if self._current is not None:
            self._current._release_by_loop()
        self.play(list(range(frame, frames)) + [t for _ in range(self.loop - 1) for t in range(frames)])

    def play(self, order: Sequence[int]) -> None:
        """Delivers these frames from now on, in this order (any frames: strides, jumps, repeats): cancels
        what is in flight, then prefetches from the first (a viewer's playback: every k-th frame, around).
        The frame last handed out stays the caller's until the next one is asked for (a viewer redraws it)."""
        self._check_frames(order)
        self._native.play([int(t) for t in order])  # stops what is in flight first; held slots stay held

    def extend(self, order: Sequence[int]) -> None:
        """Appends frames to the order; they load as slots free up, while the earlier ones are used."""
        self._check_frames(order)
        self._native.extend([int(t) for t in order])

    def _check_frames(self, order: Sequence[int]) -> None:
        frames = len(self._dataset.frames)
        for frame in order:
            if not 0 <= frame < frames:
                raise OutOfRangeError(f"frame {frame} out of range: {self._dataset.path} has {frames} frames")

    def _release(self, frame: Frame, stream: int | None, by_caller: bool) -> None:
        frame.released = True
        frame._arrays.clear()  # its own FieldArrays hold the lease too
        for gather in frame._gathers:  # grid-order gathers read the slot: done before it is refilled
            gather.synchronize()
        frame._gathers.clear()
        lease, frame._lease = frame._lease, None
        alive = weakref.ref(lease) if lease is not None else None
        del lease
        slot = frame._slot
        # A GPU frame released by the caller is refilled at once (the zero-copy loop); otherwise arrays
        # taken from the frame that outlive it keep its buffers, and the slot goes on with others.
        keeps = not by_caller or self.device is None
        if keeps and alive is not None and (held := alive()) is not None:
            frame._kept = alive
            if self.device is None:
                weakref.finalize(held, self._spares.append, slot.buffers)
            slot.natural = {}
            slot.buffers = self._spares.pop() if self._spares else self._allocate()
            self._native.rebind(slot.index, [destination_of(slot.buffers[name])[0] for name in self.fields])
            self.kept_frames += 1
            del held
        # The slot is refilled once the consumer's work on it is done: the slot stream records an event
        # on that stream and waits for it on the host, so the other slots' copies keep running meanwhile.
        self._native.release(slot.index, int(stream) if self.device is not None and stream is not None else 0)

    # ---- delivery ----
    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        if self._current is not None:
            self._current._release_by_loop()
        # GPU slots are handed out once every read is done and its GPU work issued; the frame's event
        # covers the rest. Host slots once their bytes are in place.
        delivery = self._native.next(issued=self.device is not None)
        while delivery is None and self.follow and self._published_more():
            delivery = self._native.next(issued=self.device is not None)
        if delivery is None:
            raise StopIteration
        slot = self._slots[delivery.slot]
        slot.frame, slot.fence = delivery.unit, Fence(self._queue, delivery.fence)
        summary = delivery.summary
        stored, raw = self._frame_bytes[slot.frame]
        stats = FrameStats(
            frame=slot.frame, stored_bytes=stored, raw_bytes=raw, requests=summary.requests,
            ready_s=delivery.ready_seconds, consumer_wait_s=delivery.waited_seconds, queue_wait_s=summary.queue_wait_s,
            io_s=summary.io_s, transfer_s=summary.transfer_s, h2d_s=summary.h2d_s, decode_s=summary.decode_s,
            bytes_from_cache=summary.bytes_from_cache, bytes_from_disk=summary.bytes_from_disk, bytes_held=summary.bytes_held,
            staging_waits=self._queue.stats().staging_waits,
        )
        self.history.append(stats)
        self._current = Frame(self, slot, stats)
        return self._current

    def stats(self) -> dict[str, Any]:
        """The engine queue's counters (since the engine was made) and this stream's per-frame history."""
        return {"queue": self._queue.stats(), "frames": [asdict(s) for s in self.history]}

    def close(self) -> None:
        """Cancels what is in flight and gives the slot buffers back to the engine for the next stream."""
        if self._current is not None:
            self._current._release_by_loop()
            self._current = None  # the frame and its stream refer to each other
        self._native.stop()
        slots, self._slots = self._slots, []
        buffers = [slot.buffers for slot in slots] + [slot.natural for slot in slots] + self._spares
        self._spares = []
        self._engine.keep_slot_buffers([_root(b) for held in buffers for b in held.values()])

    def __enter__(self) -> FrameStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _root(buffer: Any) -> Any:
    """The engine's buffer under a host slot's typed view (GPU slots are the engine's buffers)."""
    while isinstance(buffer, np.ndarray) and buffer.base is not None:
        buffer = buffer.base
    return buffer


def _bytes_per_frame(dataset: Any, fields: Sequence[str]) -> list[tuple[int, int]]:
    """(stored, raw) bytes of the streamed fields per frame, from the chunk table once."""
    table = dataset.container.chunk_table()
    frames = len(dataset.frames)
    mask = np.isin(table["field"], [dataset.container.field_index(name) for name in fields])
    stored = np.bincount(table["frame"][mask], weights=table["stored_size"][mask], minlength=frames)
    raw = np.bincount(table["frame"][mask], weights=table["raw_size"][mask], minlength=frames)
    return [(int(s), int(r)) for s, r in zip(stored, raw)]
