// Python bindings of the host I/O layer (headrace._ext): backend kinds, why a backend cannot work
// here, and Backend.read_into NumPy destinations. Strings from Python become enums here and
// nowhere deeper; None keeps the settings() default (environment or documented default).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/settings.hpp"

#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using headrace::io::Backend;
using headrace::io::BackendKind;
using headrace::io::ReadRequest;
using headrace::io::ReadStatus;

// Non-const element type: nanobind refuses read-only arrays, so the kernel never writes into one.
using ByteArray = nb::ndarray<std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using StatusTuple = std::tuple<std::uint64_t, int, std::string>;

std::unique_ptr<Backend> open_with_options(const std::string& kind, const std::string& path, std::optional<unsigned> threads,
                              std::optional<unsigned> queue_depth, std::optional<std::uint64_t> task_size_bytes,
                              std::optional<unsigned> submit_batch, std::optional<bool> o_direct,
                              std::optional<bool> register_buffers, std::optional<bool> register_files,
                              std::optional<std::string> mmap_mode, std::optional<unsigned> mmap_window_segments,
                              std::optional<std::uint64_t> mmap_dontneed_bytes) {
  headrace::io::BackendOptions options;
  headrace::Settings& s = options.settings;
  headrace::python::assign_if_given(s.threads, threads);
  headrace::python::assign_if_given(s.queue_depth, queue_depth);
  headrace::python::assign_if_given(s.task_size_bytes, task_size_bytes);
  headrace::python::assign_if_given(s.submit_batch, submit_batch);
  headrace::python::assign_if_given(s.uring_o_direct, o_direct);
  headrace::python::assign_if_given(s.uring_register_buffers, register_buffers);
  headrace::python::assign_if_given(s.uring_register_files, register_files);
  if (mmap_mode) s.mmap_mode = headrace::parse_mmap_mode(*mmap_mode);
  headrace::python::assign_if_given(s.mmap_window_segments, mmap_window_segments);
  headrace::python::assign_if_given(s.mmap_dontneed_bytes, mmap_dontneed_bytes);
  const BackendKind parsed = headrace::io::parse_backend_kind(kind);
  nb::gil_scoped_release release;  // ram reads the whole file here
  return headrace::io::open_backend(parsed, path, options);
}

std::vector<StatusTuple> read_into(Backend& backend, const std::vector<std::uint64_t>& offsets,
                                   const std::vector<std::uint64_t>& sizes, ByteArray destination,
                                   const std::vector<std::uint64_t>& destination_offsets) {
  HEADRACE_EXPECT(sizes.size() == offsets.size() && destination_offsets.size() == offsets.size(), headrace::UsageError,
                  "read_into: offsets, sizes and destination_offsets need one entry per request, got " +
                      std::to_string(offsets.size()) + ", " + std::to_string(sizes.size()) + " and " +
                      std::to_string(destination_offsets.size()));
  const std::uint64_t capacity = destination.shape(0);
  std::vector<ReadRequest> requests;
  requests.reserve(offsets.size());
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    HEADRACE_EXPECT(destination_offsets[i] <= capacity && sizes[i] <= capacity - destination_offsets[i],
                    headrace::UsageError,
                    "read_into: request " + std::to_string(i) + " needs destination bytes [" +
                        std::to_string(destination_offsets[i]) + ", " +
                        std::to_string(destination_offsets[i] + sizes[i]) + ") but the array holds " +
                        std::to_string(capacity));
    requests.push_back(ReadRequest{offsets[i], sizes[i], destination.data() + destination_offsets[i]});
  }
  std::vector<ReadStatus> statuses;
  {
    nb::gil_scoped_release release;
    statuses = backend.read(std::move(requests));
  }
  std::vector<StatusTuple> result;
  result.reserve(statuses.size());
  for (ReadStatus& status : statuses) result.emplace_back(status.bytes_read, status.error_number, std::move(status.message));
  return result;
}

}  // namespace

void bind_io(nb::module_& m) {
  auto kinds = nb::enum_<BackendKind>(m, "BackendKind", "Host I/O backends (docs/io.md).");
  for (BackendKind kind : headrace::io::all_backend_kinds()) kinds.value(headrace::io::to_string(kind), kind);

  m.def(
      "backend_unavailable_reason",
      [](const std::string& kind, const std::string& path) {
        return headrace::io::unavailable_reason(headrace::io::parse_backend_kind(kind), path);
      },
      "kind"_a, "path"_a,
      "Why backend `kind` cannot read `path` on this machine with the current settings, or None when it can.");

  nb::class_<Backend>(m, "Backend", "An open file behind one host I/O backend; made by open_backend().")
      .def_prop_ro("kind", &Backend::kind)
      .def_prop_ro("path", &Backend::path)
      .def_prop_ro("file_size", &Backend::file_size)
      .def("describe", &Backend::describe, "The knobs in effect, e.g. 'posix threads=16 task=4MiB'.")
      .def("read_into", &read_into, "offsets"_a, "sizes"_a,
           // noconvert: a converted copy would receive the bytes and be thrown away.
           nb::arg("destination").noconvert(), "destination_offsets"_a,
           "Reads file bytes [offsets[i], offsets[i] + sizes[i]) into destination[destination_offsets[i]:] for "
           "every i, without holding the GIL. Returns (bytes_read, errno, message) per request; errno is 0 and "
           "message empty on success, errno is ENODATA when the file ended first.");

  m.def("open_backend", &open_with_options, "kind"_a, "path"_a, "threads"_a = nb::none(), "queue_depth"_a = nb::none(),
        "task_size_bytes"_a = nb::none(), "submit_batch"_a = nb::none(), "o_direct"_a = nb::none(),
        "register_buffers"_a = nb::none(), "register_files"_a = nb::none(), "mmap_mode"_a = nb::none(),
        "mmap_window_segments"_a = nb::none(), "mmap_dontneed_bytes"_a = nb::none(),
        "Opens `path` with backend `kind` (posix|direct|mmap|uring|ram). Arguments left None keep the settings "
        "defaults (HEADRACE_* environment variables). Raises UnavailableError when the backend cannot work here "
        "and FileOpenError when the path cannot be opened.");
}
