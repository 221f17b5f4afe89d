// gpu layer: whether a GPU is usable, device memory that Python frameworks take without a copy.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/copy_rate.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {

// The GPU's primary context stays retained while the stream lives (no other owner may hold it).
struct OwnStream {
  gpu::Device device;
  gpu::Stream stream;
  explicit OwnStream(int ordinal) : device(ordinal), stream((device.make_current(), gpu::Stream())) {}
};

}  // namespace

void bind_gpu(nb::module_& m) {
  m.def("gpu_count", &gpu::device_count, "GPUs the CUDA driver sees (0 without a driver).");
  m.def("gpu_unavailable_reason", []() -> std::string { return gpu::driver() ? "" : gpu::why_no_driver(); });

  m.def("pinned_copy_rate", &gpu::pinned_copy_rate, "device"_a, "size_bytes"_a = std::size_t{256} << 20, "repeats"_a = 3u,
        nb::call_guard<nb::gil_scoped_release>(),
        "Bytes per second of the fastest of `repeats` page-locked host-to-device copies of `size_bytes` (CUDA events).");

  nb::class_<OwnStream>(m, "CudaStream", "A CUDA stream of its own (non-blocking) on a GPU, whose context it holds.")
      .def(nb::init<int>(), "device"_a)
      .def_prop_ro("handle", [](const OwnStream& s) { return reinterpret_cast<std::uintptr_t>(s.stream.handle()); },
                   "The CUstream, as an integer (CuPy's ExternalStream, the DLPack stream argument).")
      .def("synchronize", [](const OwnStream& s) { s.stream.synchronize(); }, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<gpu::Event>(m, "Event", "A CUDA event recorded on a stream (query or wait for it).")
      .def("__init__", [](gpu::Event* self, int device, std::uintptr_t stream) {
             gpu::Device(device).make_current();
             new (self) gpu::Event();
             self->record(reinterpret_cast<gpu::CUstream>(stream));
           }, "device"_a, "stream"_a, "Records a new event on stream now.")
      .def("query", &gpu::Event::query, "True once the work before it has completed.")
      .def("synchronize", &gpu::Event::synchronize, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<gpu::DeviceBuffer>(m, "DeviceBuffer", "GPU memory owned by headrace (freed with the object).")
      .def("__init__", [](gpu::DeviceBuffer* self, int device, std::size_t size_bytes) {
             gpu::Device(device).make_current();
             new (self) gpu::DeviceBuffer(size_bytes);
           }, "device"_a, "size_bytes"_a)
      .def_prop_ro("pointer", &gpu::DeviceBuffer::pointer)
      .def_prop_ro("size_bytes", &gpu::DeviceBuffer::size_bytes)
      .def("to_host", [](const gpu::DeviceBuffer& b, std::optional<std::size_t> size, std::size_t offset) {
             HEADRACE_EXPECT(offset <= b.size_bytes(), UsageError, "to_host: offset outside the buffer");
             const std::size_t count = size.value_or(b.size_bytes() - offset);
             HEADRACE_EXPECT(count <= b.size_bytes() - offset, UsageError, "to_host: range outside the buffer");
             std::string bytes(count, '\0');
             gpu::copy_to_host(bytes.data(), b.pointer() + offset, count);
             return nb::bytes(bytes.data(), bytes.size());
           }, "size"_a = nb::none(), "offset"_a = 0,
           "Copies `size` bytes from `offset` back to the host (default: to the end; synchronously; for checks).")
      .def("view", [](nb::handle self, const std::string& dtype, std::vector<std::size_t> shape, int device,
                      std::size_t offset, nb::handle owner) {
             const auto& b = nb::cast<const gpu::DeviceBuffer&>(self);
             nb::dlpack::dtype type;
             if (dtype == "float32") type = nb::dtype<float>();
             else if (dtype == "float64") type = nb::dtype<double>();
             else if (dtype == "int64") type = nb::dtype<std::int64_t>();
             else if (dtype == "int32") type = nb::dtype<std::int32_t>();
             else if (dtype == "uint32") type = nb::dtype<std::uint32_t>();
             else if (dtype == "uint64") type = nb::dtype<std::uint64_t>();
             else if (dtype == "int16") type = nb::dtype<std::int16_t>();
             else if (dtype == "uint16") type = nb::dtype<std::uint16_t>();
             else if (dtype == "int8") type = nb::dtype<std::int8_t>();
             else if (dtype == "uint8") type = nb::dtype<std::uint8_t>();
             else throw UsageError("view: unknown dtype " + dtype);
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
