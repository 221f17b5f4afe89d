// queue layer: the request queue. Destinations are addresses here; the Python Queue keeps the
// arrays behind them alive until their requests finish.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "headrace/queue/request_queue.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {

using queue::MemoryKind;
using queue::Queue;

MemoryKind parse_memory_kind(const std::string& text) {
  if (text == "host") return MemoryKind::host;
  if (text == "device") return MemoryKind::device;
  throw UsageError("destination kind '" + text + "': expected host|device");
}

nb::dict status_dict(const queue::RequestStatus& s) {
  nb::dict d;
  d["state"] = queue::to_string(s.state);
  d["message"] = s.message;
  d["completion_index"] = s.completion_index;
  d["queue_wait_s"] = s.queue_wait_s;
  d["io_s"] = s.io_s;
  d["transfer_s"] = s.transfer_s;
  d["h2d_s"] = s.h2d_s;
  d["decode_s"] = s.decode_s;
  return d;
}

}  // namespace

void bind_queue(nb::module_& m) {
  nb::class_<Queue>(m, "Queue", "The request queue (see headrace.Queue for the typed API).")
      .def("__init__", [](Queue* self, const std::string& backend, int device, std::uint64_t staging_bytes, unsigned max_batch,
                          std::uint64_t max_direct_bytes, bool decode_on_gpu, unsigned decode_threads,
                          std::optional<unsigned> threads, std::optional<unsigned> queue_depth,
                          std::optional<std::uint64_t> task_size_bytes, std::optional<bool> o_direct, bool cufile,
                          bool pin_files, bool verify_checksums, bool stream_value_fences,
                          std::optional<std::string> mmap_mode, std::optional<unsigned> mmap_window_segments) {
             queue::QueueOptions options;
             options.backend = io::parse_backend_kind(backend);
             options.device = device;
             options.staging_bytes = staging_bytes;
             options.max_batch = max_batch;
             options.max_direct_bytes = max_direct_bytes;
             options.decode_on_gpu = decode_on_gpu;
             options.decode_threads = decode_threads;
             options.cufile = cufile;
             options.pin_files = pin_files;
             options.verify_checksums = verify_checksums;
             options.stream_value_fences = stream_value_fences;
             assign_if_given(options.io.threads, threads);
             assign_if_given(options.io.queue_depth, queue_depth);
             assign_if_given(options.io.task_size_bytes, task_size_bytes);
             assign_if_given(options.io.uring_o_direct, o_direct);
             if (mmap_mode) options.io.mmap_mode = parse_mmap_mode(*mmap_mode);
             assign_if_given(options.io.mmap_window_segments, mmap_window_segments);
             options.io.validate();
             nb::gil_scoped_release release;
             new (self) Queue(std::move(options));
           }, "backend"_a = "uring", "device"_a = -1, "staging_bytes"_a = std::uint64_t{256} << 20, "max_batch"_a = 64u,
           "max_direct_bytes"_a = std::uint64_t{256} << 20, "decode_on_gpu"_a = true, "decode_threads"_a = 0u,
           "threads"_a = nb::none(), "queue_depth"_a = nb::none(), "task_size_bytes"_a = nb::none(), "o_direct"_a = nb::none(),
           "cufile"_a = false, "pin_files"_a = false, "verify_checksums"_a = true,
           "stream_value_fences"_a = false, "mmap_mode"_a = nb::none(), "mmap_window_segments"_a = nb::none())
      .def("add_file", &Queue::add_file, "path"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("enqueue", [](Queue& q, queue::FileId file, std::uint64_t offset, std::uint64_t stored_size, std::uint64_t raw_size,
                         std::uintptr_t destination, const std::string& kind, const std::string& codec,
                         std::optional<std::uint64_t> checksum, int priority, std::uint64_t tag, const std::string& label) {
             queue::Request r;
             r.file = file;
             r.offset = offset;
             r.stored_size = stored_size;
             r.raw_size = raw_size;
             r.codec = format::parse_codec(codec);
             r.checksum = checksum;
             r.destination = {parse_memory_kind(kind), destination, raw_size};
             r.priority = priority;
             r.tag = tag;
             r.label = label;
             return q.enqueue(std::move(r));
           }, "file"_a, "offset"_a, "stored_size"_a, "raw_size"_a, "destination"_a, "kind"_a = "host", "codec"_a = "none",
           "checksum"_a = nb::none(), "priority"_a = 0, "tag"_a = 0, "label"_a = "")
      .def("enqueue_chunks", [](Queue& q, queue::FileId file, const format::Container& container, std::uint32_t frame,
                                std::uint32_t field, std::uintptr_t destination, const std::string& kind, int priority,
                                std::uint64_t tag) {
             const auto memory = parse_memory_kind(kind);
             const auto& info = container.fields()[field];
             std::vector<queue::RequestId> ids;
             std::uint64_t k = container.frame_field(frame, field).first_chunk;
             for (const auto& chunk : container.chunks_of(frame, field)) {
               queue::Request r = queue::chunk_request(
                   file, chunk, {memory, destination + chunk.first_element * info.element_bytes(), chunk.raw_size});
               r.priority = priority;
               r.tag = tag;
               r.label = queue::chunk_label(container, frame, field, k++, chunk);
               ids.push_back(q.enqueue(std::move(r)));
             }
             return ids;
           }, "file"_a, "container"_a, "frame"_a, "field"_a, "destination"_a, "kind"_a = "host", "priority"_a = 0, "tag"_a = 0,
           "Enqueues every chunk of one field of one frame, checksums verified, into destination.")
      .def("enqueue_signal", &Queue::enqueue_signal)
      .def("submit", &Queue::submit)
      .def("cancel", &Queue::cancel, "request"_a)
      .def("cancel_tag", &Queue::cancel_tag, "tag"_a)
      .def("status", [](const Queue& q, queue::RequestId id) { return status_dict(q.status(id)); }, "request"_a)
      .def("states", [](const Queue& q, const std::vector<queue::RequestId>& ids) {
             std::vector<std::string> states;
             for (auto id : ids) states.emplace_back(queue::to_string(q.status(id).state));
             return states;
           }, "requests"_a)
      .def("is_signaled", &Queue::is_signaled, "fence"_a)
      .def("wait", &Queue::wait, "fence"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("fence_event", &Queue::fence_event, "fence"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("wait_on_stream", &Queue::wait_on_stream, "fence"_a, "stream"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("drain", &Queue::drain, nb::call_guard<nb::gil_scoped_release>())
      .def("stats", [](const Queue& q) {
             const auto s = q.stats();
             nb::dict d;
             d["requests_done"] = s.requests_done;
             d["requests_failed"] = s.requests_failed;
             d["requests_cancelled"] = s.requests_cancelled;
             d["stored_bytes"] = s.stored_bytes;
             d["raw_bytes"] = s.raw_bytes;
             d["backend_submits"] = s.backend_submits;
             d["backend_reads"] = s.backend_reads;
             d["staging_waits"] = s.staging_waits;
             d["checksums_checked"] = s.checksums_checked;
             d["depth_samples"] = s.depth_samples;
             return d;
           })
      .def_prop_ro("has_gpu", &Queue::has_gpu)
      .def_prop_ro("copy_stream", &Queue::copy_stream)
      .def("describe", &Queue::describe);
}

}  // namespace headrace::python
