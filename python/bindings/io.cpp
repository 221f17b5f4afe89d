// Python bindings of the host I/O layer (headrace._ext): the typed I/O settings, backend kinds, why a
// backend cannot work here, and Backend.read_into NumPy destinations. Strings from Python become enums
// here and nowhere deeper. Settings' fields are the one list of I/O knobs: Python sets them by name.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
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
#include "headrace/io/page_cache.hpp"
#include "headrace/staging/pinned_files.hpp"
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

std::unique_ptr<Backend> open_with_settings(const std::string& kind, const std::string& path,
                                            std::optional<headrace::Settings> settings) {
  headrace::io::BackendOptions options;
  if (settings) options.settings = *settings;
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
  using headrace::Settings;
  nb::class_<Settings>(m, "Settings",
                       "The I/O knobs (docs/settings.md): Settings() holds the documented defaults, Settings.current() "
                       "the process's (defaults overridden by HEADRACE_<NAME>). validate() raises UsageError naming a "
                       "knob out of its range.")
      .def(nb::init<>())
      .def(nb::init<const Settings&>(), "other"_a, "A copy.")
      .def_static("current", [] { return headrace::settings(); }, "The process's settings (HEADRACE_* applied).")
      .def_rw("threads", &Settings::threads, "worker threads of the thread-pool backends (posix, direct, mmap, ram)")
      .def_rw("task_size_bytes", &Settings::task_size_bytes, "large requests are split into tasks (uring: blocks) of this size")
      .def_rw("queue_depth", &Settings::queue_depth, "io_uring reads in flight")
      .def_rw("submit_batch", &Settings::submit_batch, "io_uring SQEs prepared per io_uring_submit")
      .def_rw("uring_register_buffers", &Settings::uring_register_buffers, "io_uring reads through registered bounce buffers")
      .def_rw("uring_register_files", &Settings::uring_register_files, "the file registered with the ring")
      .def_rw("uring_o_direct", &Settings::uring_o_direct, "the uring backend opens the file with O_DIRECT")
      .def_prop_rw(
          "mmap_mode", [](const Settings& s) { return std::string(headrace::to_string(s.mmap_mode)); },
          [](Settings& s, const std::string& mode) { s.mmap_mode = headrace::parse_mmap_mode(mode); },
          "mmap backend mapping policy: whole, segment or window")
      .def_rw("mmap_window_segments", &Settings::mmap_window_segments, "mmap window mode: mappings in flight")
      .def_rw("mmap_dontneed_bytes", &Settings::mmap_dontneed_bytes, "mmap: madvise(MADV_DONTNEED) after this many bytes; 0: never")
      .def("validate", &Settings::validate)
      .def("to_dict", [](nb::handle self) { return headrace::python::fields_dict(self); }, "The knobs by name.")
      .def("__repr__", [](nb::handle self) { return headrace::python::fields_repr(self); });

  m.def("backends", [] {
         std::vector<std::pair<std::string, bool>> backends;
         for (const auto& [kind, name] : headrace::io::backend_kind_names) backends.emplace_back(name, headrace::io::reads_into_gpu(kind));
         return backends;
       }, "Every I/O backend (docs/io.md): (name, reads_into_gpu) each, the host backends first.");
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

  m.def(
      "default_pin_budget",
      [] {
        const auto budget = headrace::staging::default_pin_budget();
        return nb::make_tuple(budget.bytes, budget.source);
      },
      "(bytes, why): the budget an engine page-locks files within when pin_budget_bytes is 0.");
  m.def(
      "page_cache_resident_bytes",
      [](const std::string& path) {
        const headrace::io::PageCacheResidency residency(path);
        return residency.resident_bytes(0, residency.file_size());
      },
      "path"_a, nb::call_guard<nb::gil_scoped_release>(),
      "Bytes of the file the page cache holds now (mincore over a mapping that touches no page).");

  m.def("open_backend", &open_with_settings, "kind"_a, "path"_a, "settings"_a = nb::none(),
        "Opens path with backend kind (posix, direct, mmap, uring, ram) and these I/O settings (default: "
        "Settings.current()). Raises UnavailableError when the backend cannot work here and FileNotFoundError "
        "when the file cannot be opened.");
}
