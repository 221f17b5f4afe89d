// gpu layer: whether a GPU is usable, device memory that Python frameworks take without a copy.
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "headrace/error.hpp"
#include "headrace/format/dtype.hpp"
#include "headrace/gpu/communicator.hpp"
#include "headrace/gpu/copy_rate.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/grid_order.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/shim/nccl.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {

gpu::GridUnits grid_units(const std::array<std::uint64_t, 3>& dims, const std::array<std::uint64_t, 3>& unit) {
  gpu::GridUnits g;
  for (int axis = 0; axis < 3; ++axis) g.dims[axis] = dims[axis], g.unit[axis] = unit[axis];
  for (int axis = 0; axis < 2; ++axis) g.units_across[axis] = unit[axis] ? (dims[axis] + unit[axis] - 1) / unit[axis] : 0;
  return g;
}

nb::dlpack::dtype dlpack_dtype(format::DType dtype) {
  switch (dtype) {
    case format::DType::uint8: return nb::dtype<std::uint8_t>();
    case format::DType::int8: return nb::dtype<std::int8_t>();
    case format::DType::uint16: return nb::dtype<std::uint16_t>();
    case format::DType::int16: return nb::dtype<std::int16_t>();
    case format::DType::uint32: return nb::dtype<std::uint32_t>();
    case format::DType::int32: return nb::dtype<std::int32_t>();
    case format::DType::uint64: return nb::dtype<std::uint64_t>();
    case format::DType::int64: return nb::dtype<std::int64_t>();
    case format::DType::float32: return nb::dtype<float>();
    case format::DType::float64: return nb::dtype<double>();
  }
  throw UsageError("view: dtype code " + std::to_string(static_cast<int>(dtype)));
}

// The GPU's primary context stays retained while the stream lives (no other owner may hold it).
struct OwnStream {
  std::optional<gpu::Device> device;
  std::optional<gpu::Stream> stream;
  explicit OwnStream(int ordinal) : device(std::in_place, ordinal) {
    device->make_current();
    stream.emplace();
  }
  [[nodiscard]] const gpu::Stream& open() const {
    HEADRACE_EXPECT(stream.has_value(), UsageError, "this CudaStream was closed");
    return *stream;
  }
  // The stream, then this hold on the context: the last hold's release tears the context down (60 ms
  // and more), which close() lets happen without the interpreter's lock, where a destructor holds it.
  void close() noexcept {
    stream.reset();
    device.reset();
  }
};

// GPU memory whose GPU's primary context stays retained while it lives: made where nothing else holds the
// context (a probe's destination before any queue), it would otherwise be allocated in a context that
// was released, or outlive it.
struct OwnDeviceBuffer {
  gpu::Device device;
  gpu::DeviceBuffer buffer;
  OwnDeviceBuffer(int ordinal, std::size_t size_bytes) : device(ordinal), buffer((device.make_current(), gpu::DeviceBuffer(size_bytes))) {}
};

}  // namespace

void bind_gpu(nb::module_& m) {
  // The first asks load the driver and run cuInit (about 0.1 s): other threads go on meanwhile.
  m.def("gpu_count", &gpu::device_count, "GPUs the CUDA driver sees (0 without a driver).",
        nb::call_guard<nb::gil_scoped_release>());
  m.def("gpu_unavailable_reason", []() -> std::string { return gpu::driver() ? "" : gpu::why_no_driver(); },
        nb::call_guard<nb::gil_scoped_release>());

  m.def("gpu_memory",
        [](int device) {
          const gpu::Device gpu(device);  // its primary context held while asked
          gpu.make_current();
          std::size_t free_bytes = 0, total_bytes = 0;
          gpu::check(gpu::require_driver().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
          return std::make_pair(free_bytes, total_bytes);
        },
        "device"_a, "GPU `device`'s memory: (bytes free, bytes in all).");
  m.def("gpu_pci_address",
        [](int device) {
          const auto& cuda = gpu::require_driver();
          gpu::CUdevice handle = 0;
          gpu::check(cuda.cuDeviceGet(&handle, device), "cuDeviceGet");
          int domain = 0, bus = 0, slot = 0;
          constexpr int pci_bus = 33, pci_device = 34, pci_domain = 50;  // CU_DEVICE_ATTRIBUTE_PCI_*_ID
          gpu::check(cuda.cuDeviceGetAttribute(&bus, pci_bus, handle), "cuDeviceGetAttribute");
          gpu::check(cuda.cuDeviceGetAttribute(&slot, pci_device, handle), "cuDeviceGetAttribute");
          gpu::check(cuda.cuDeviceGetAttribute(&domain, pci_domain, handle), "cuDeviceGetAttribute");
          char address[32];
          std::snprintf(address, sizeof address, "%04x:%02x:%02x.0", domain, bus, slot);
          return std::string(address);
        },
        "device"_a, "GPU `device`'s PCI address, as /sys/bus/pci/devices names it (dddd:bb:ss.0).");
  nb::class_<gpu::PinnedCopies>(m, "PinnedCopies",
                                "Back-to-back pinned host-to-device copies on one GPU, the buffers made up front.")
      .def(nb::init<int, std::size_t>(), "device"_a, "size_bytes"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("run", &gpu::PinnedCopies::run, "copies"_a, nb::call_guard<nb::gil_scoped_release>(),
           "Seconds (wall clock) for `copies` copies on one stream, waited for.");
  m.def("pinned_copy_rate", &gpu::pinned_copy_rate, "device"_a, "size_bytes"_a = std::size_t{256} << 20, "repeats"_a = 3u,
        nb::call_guard<nb::gil_scoped_release>(),
        "Bytes per second of the fastest of `repeats` page-locked host-to-device copies of `size_bytes` (CUDA events).");

  nb::class_<OwnStream>(m, "CudaStream", "A CUDA stream of its own (non-blocking) on a GPU, whose context it holds.")
      .def(nb::init<int>(), "device"_a, nb::call_guard<nb::gil_scoped_release>())  // a context takes 0.1 to 0.5 s
      .def_prop_ro("handle", [](const OwnStream& s) { return reinterpret_cast<std::uintptr_t>(s.open().handle()); },
                   "The CUstream, as an integer (CuPy's ExternalStream, the DLPack stream argument).")
      .def("synchronize", [](const OwnStream& s) { s.open().synchronize(); }, nb::call_guard<nb::gil_scoped_release>())
      .def("close", &OwnStream::close, nb::call_guard<nb::gil_scoped_release>(),
           "Destroys the stream and lets go of the context; the context goes with the last of its holders. Idempotent.");

  m.def("nccl_unavailable_reason", []() -> std::string { return shim::nccl() ? "" : shim::why_no_nccl(); },
        "Why NCCL cannot be loaded (empty when it can).");
  m.def("nccl_unique_id",
        []() {
          const shim::NcclUniqueId id = gpu::Communicator::unique_id();
          return nb::bytes(id.internal, sizeof id.internal);
        },
        "A new NCCL unique id (128 bytes): drawn by one rank, given to every rank's GpuCommunicator.");
  nb::class_<gpu::Communicator>(m, "GpuCommunicator",
                                "This rank's NCCL communicator on GPU `device`: every rank of the job makes one, with the same id.")
      .def("__init__",
           [](gpu::Communicator* self, nb::bytes id, int size, int rank, int device) {
             HEADRACE_EXPECT(id.size() == shim::nccl_unique_id_bytes, UsageError,
                             "an NCCL unique id is " + std::to_string(shim::nccl_unique_id_bytes) + " bytes, got " + std::to_string(id.size()));
             shim::NcclUniqueId unique{};
             std::memcpy(unique.internal, id.c_str(), sizeof unique.internal);
             nb::gil_scoped_release release;  // collective: waits for every rank
             new (self) gpu::Communicator(unique, size, rank, device);
           },
           "unique_id"_a, "size"_a, "rank"_a, "device"_a)
      .def_prop_ro("size", &gpu::Communicator::size)
      .def_prop_ro("rank", &gpu::Communicator::rank)
      .def_prop_ro("device", &gpu::Communicator::device)
      .def("describe", &gpu::Communicator::describe, "The library: NCCL's version and path.");

  nb::class_<gpu::Event>(m, "Event", "A CUDA event recorded on a stream (query or wait for it).")
      .def("__init__", [](gpu::Event* self, int device, std::uintptr_t stream) {
             gpu::Device(device).make_current();
             new (self) gpu::Event();
             self->record(reinterpret_cast<gpu::CUstream>(stream));
           }, "device"_a, "stream"_a, "Records a new event on stream now.")
      .def("query", &gpu::Event::query, "True once the work before it has completed.")
      .def("wait_on_stream", [](const gpu::Event& e, std::uintptr_t stream) {
             gpu::check(gpu::require_driver().cuStreamWaitEvent(reinterpret_cast<gpu::CUstream>(stream), e.handle(), 0),
                        "cuStreamWaitEvent");
           }, "stream"_a, "Makes `stream` wait for the event without blocking the host.")
      .def("synchronize", &gpu::Event::synchronize, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<gpu::GridOrderKernel>(m, "GridOrderKernel",
                                   "Puts a grid field stored in units (blocks, Hilbert partitions) into grid order on a GPU.")
      .def(nb::init<int>(), "device"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("gather",
           [](const gpu::GridOrderKernel& self, std::uintptr_t stored, std::uintptr_t natural, std::array<std::uint64_t, 3> dims,
              std::array<std::uint64_t, 3> unit, std::uintptr_t local_order, std::uint32_t element_bytes, std::uintptr_t stream) {
             self.gather(stored, natural, grid_units(dims, unit), local_order, element_bytes, reinterpret_cast<gpu::CUstream>(stream));
           },
           "stored"_a, "natural"_a, "dims"_a, "unit"_a, "local_order"_a, "element_bytes"_a, "stream"_a,
           nb::call_guard<nb::gil_scoped_release>(),
           "natural[p] = stored[its stored position] for each point p of a grid of dims (X, Y, Z) stored in units of unit "
           "points (x fastest), each unit's points in the order local_order gives (a device address of unit_points uint32, "
           "or 0: x fastest); element_bytes each; asynchronous on stream.");
  m.def("gather_grid_order_host",
        [](nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> stored,
           nb::ndarray<std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> natural, std::array<std::uint64_t, 3> dims,
           std::array<std::uint64_t, 3> unit, std::optional<nb::ndarray<const std::uint32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>> local_order,
           std::uint32_t element_bytes) {
          const gpu::GridUnits g = grid_units(dims, unit);
          HEADRACE_EXPECT(natural.shape(0) == g.points() * element_bytes, UsageError,
                          "gather_grid_order_host: natural holds " + std::to_string(natural.shape(0)) + " bytes, the grid " +
                              std::to_string(g.points() * element_bytes));
          HEADRACE_EXPECT(stored.shape(0) >= g.units_across[0] * g.units_across[1] * ((dims[2] + unit[2] - 1) / unit[2]) *
                                                 g.unit_points() * element_bytes,
                          UsageError, "gather_grid_order_host: stored holds fewer bytes than its units");
          HEADRACE_EXPECT(!local_order || local_order->shape(0) == g.unit_points(), UsageError,
                          "gather_grid_order_host: local_order needs one entry per point of a unit");
          nb::gil_scoped_release release;
          gpu::gather_grid_order_host(reinterpret_cast<const std::byte*>(stored.data()), reinterpret_cast<std::byte*>(natural.data()), g,
                                      local_order ? local_order->data() : nullptr, element_bytes);
        },
        "stored"_a, "natural"_a, "dims"_a, "unit"_a, "local_order"_a.none(), "element_bytes"_a,
        "The CPU twin of GridOrderKernel.gather over host bytes (the reference its GPU results are checked against).");

  nb::class_<OwnDeviceBuffer>(m, "DeviceBuffer", "GPU memory owned by headrace (freed with the object), whose GPU's context it holds.")
      .def(nb::init<int, std::size_t>(), "device"_a, "size_bytes"_a)
      .def_prop_ro("pointer", [](const OwnDeviceBuffer& b) { return b.buffer.pointer(); })
      .def_prop_ro("size_bytes", [](const OwnDeviceBuffer& b) { return b.buffer.size_bytes(); })
      .def("to_host", [](const OwnDeviceBuffer& own, std::optional<std::size_t> size, std::size_t offset) {
             const gpu::DeviceBuffer& b = own.buffer;
             HEADRACE_EXPECT(offset <= b.size_bytes(), UsageError, "to_host: offset outside the buffer");
             const std::size_t count = size.value_or(b.size_bytes() - offset);
             HEADRACE_EXPECT(count <= b.size_bytes() - offset, UsageError, "to_host: range outside the buffer");
             std::string bytes(count, '\0');
             gpu::copy_to_host(bytes.data(), b.pointer() + offset, count);
             return nb::bytes(bytes.data(), bytes.size());
           }, "size"_a = nb::none(), "offset"_a = 0,
           "Copies `size` bytes from `offset` back to the host (default: to the end; synchronously; for checks).")
      .def("copy_from_host", [](const OwnDeviceBuffer& own, nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> bytes,
                                std::size_t offset) {
             const gpu::DeviceBuffer& b = own.buffer;
             HEADRACE_EXPECT(offset <= b.size_bytes() && bytes.shape(0) <= b.size_bytes() - offset, UsageError,
                             "copy_from_host: " + std::to_string(bytes.shape(0)) + " bytes at " + std::to_string(offset) +
                                 " outside a buffer of " + std::to_string(b.size_bytes()));
             nb::gil_scoped_release release;
             gpu::copy_to_device(b.pointer() + offset, bytes.data(), bytes.shape(0));
           }, "bytes"_a, "offset"_a = 0, "Copies host bytes (uint8, 1-D) into the buffer at `offset`, synchronously (small tables).")
      .def("view", [](nb::handle self, const std::string& dtype, std::vector<std::size_t> shape, int device,
                      std::size_t offset, nb::handle owner) {
             const gpu::DeviceBuffer& b = nb::cast<const OwnDeviceBuffer&>(self).buffer;
             const nb::dlpack::dtype type = dlpack_dtype(format::parse_dtype(dtype));
             std::size_t bytes = type.bits / 8;
             for (auto extent : shape) bytes *= extent;
             HEADRACE_EXPECT(offset + bytes <= b.size_bytes(), UsageError, "view: shape larger than the buffer");
             // The view keeps its owner alive (the buffer, or an object that holds it): DLPack consumers hold
             // the memory, not a copy.
             return nb::ndarray<>(reinterpret_cast<void*>(b.pointer() + offset), shape.size(), shape.data(),
                                  owner.is_none() ? self : owner, nullptr, type, nb::device::cuda::value, device);
           }, "dtype"_a, "shape"_a, "device"_a, "offset"_a = 0, "owner"_a = nb::none(),
           "A DLPack-capable array over the buffer (no copy), keeping `owner` (default: the buffer) alive.");
}

}  // namespace headrace::python
