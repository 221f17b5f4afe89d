// queue layer: the request queue. Destinations are addresses here; the Python Queue keeps the
// arrays behind them alive until their requests finish.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "headrace/engine/frame_fill.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/engine/slot_stream.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {

using headrace::Settings;
using queue::MemoryKind;
using engine::Queue;

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
  d["source"] = queue::to_string(s.source);
  return d;
}

}  // namespace

void bind_queue(nb::module_& m) {
  nb::class_<engine::QueueStats>(m, "QueueStats", "A queue's counters since it was made (bounded: no history).")
      .def_ro("requests_done", &engine::QueueStats::requests_done)
      .def_ro("requests_failed", &engine::QueueStats::requests_failed)
      .def_ro("requests_cancelled", &engine::QueueStats::requests_cancelled)
      .def_ro("stored_bytes", &engine::QueueStats::stored_bytes)
      .def_ro("raw_bytes", &engine::QueueStats::raw_bytes)
      .def_ro("bytes_from_cache", &engine::QueueStats::bytes_from_cache)
      .def_ro("bytes_from_disk", &engine::QueueStats::bytes_from_disk)
      .def_ro("bytes_pinned", &engine::QueueStats::bytes_pinned)
      .def_ro("backend_submits", &engine::QueueStats::backend_submits)
      .def_ro("backend_reads", &engine::QueueStats::backend_reads)
      .def_ro("staging_waits", &engine::QueueStats::staging_waits)
      .def_ro("checksums_checked", &engine::QueueStats::checksums_checked)
      .def_ro("max_reads_in_flight", &engine::QueueStats::max_reads_in_flight)
      .def_ro("mean_reads_in_flight", &engine::QueueStats::mean_reads_in_flight)
      .def_ro("busy_seconds", &engine::QueueStats::busy_seconds)
      .def_ro("retained_requests", &engine::QueueStats::retained_requests);

  nb::class_<queue::RequestSummary>(m, "RequestSummary", "A set of requests summed up (a frame, a batch).")
      .def_ro("requests", &queue::RequestSummary::requests)
      .def_ro("done", &queue::RequestSummary::done)
      .def_ro("failed", &queue::RequestSummary::failed)
      .def_ro("cancelled", &queue::RequestSummary::cancelled)
      .def_ro("unfinished", &queue::RequestSummary::unfinished)
      .def_ro("first_failure", &queue::RequestSummary::first_failure)
      .def_ro("stored_bytes", &queue::RequestSummary::stored_bytes)
      .def_ro("raw_bytes", &queue::RequestSummary::raw_bytes)
      .def_ro("bytes_from_cache", &queue::RequestSummary::bytes_from_cache)
      .def_ro("bytes_from_disk", &queue::RequestSummary::bytes_from_disk)
      .def_ro("bytes_pinned", &queue::RequestSummary::bytes_pinned)
      .def_ro("bytes_other", &queue::RequestSummary::bytes_other)
      .def_ro("queue_wait_s", &queue::RequestSummary::queue_wait_s)
      .def_ro("io_s", &queue::RequestSummary::io_s)
      .def_ro("transfer_s", &queue::RequestSummary::transfer_s)
      .def_ro("h2d_s", &queue::RequestSummary::h2d_s)
      .def_ro("decode_s", &queue::RequestSummary::decode_s);

  m.def("queue_defaults", [] {
        const auto o = engine::QueueOptions::from_environment();
        nb::dict d;
        d["backend"] = o.backend ? io::to_string(*o.backend) : "auto";
        d["cache_policy"] = io::to_string(o.cache_policy);
        d["pin_files"] = staging::to_string(o.pin_files);
        d["pin_budget_bytes"] = o.pin_budget_bytes;  // 0: a quarter of the machine's memory
        d["staging_bytes"] = o.staging_bytes;
        d["max_batch"] = o.max_batch;
        d["decode_threads"] = o.decode_threads;
        d["verify_checksums"] = o.verify_checksums;
        d["strict"] = o.strict;
        d["status_history"] = o.status_history;
        return d;
      }, "The queue options a queue gets when none are given: defaults, then HEADRACE_<NAME> (docs/settings.md).");

  nb::class_<Queue>(m, "Queue", "The request queue (see headrace.Queue for the typed API).")
      .def("__init__", [](Queue* self, int device, std::optional<std::string> backend, std::optional<std::string> cache_policy,
                          std::optional<std::uint64_t> staging_bytes, std::optional<unsigned> max_batch,
                          std::optional<std::uint64_t> max_direct_bytes, std::optional<bool> decode_on_gpu,
                          std::optional<unsigned> decode_threads, std::optional<Settings> io,
                          std::optional<std::string> pin_files, std::optional<std::uint64_t> pin_budget_bytes,
                          std::optional<bool> verify_checksums, std::optional<bool> stream_value_fences,
                          std::optional<bool> strict, std::optional<std::uint64_t> status_history) {
             // Every option not given keeps its default, overridden by HEADRACE_<NAME> (docs/settings.md).
             engine::QueueOptions options = engine::QueueOptions::from_environment();
             options.device = device;
             if (backend) options.backend = *backend == "auto" ? std::nullopt : std::optional(io::parse_backend_kind(*backend));
             if (cache_policy) options.cache_policy = io::parse_cache_policy(*cache_policy);
             assign_if_given(options.staging_bytes, staging_bytes);
             assign_if_given(options.max_batch, max_batch);
             assign_if_given(options.max_direct_bytes, max_direct_bytes);
             assign_if_given(options.decode_on_gpu, decode_on_gpu);
             assign_if_given(options.decode_threads, decode_threads);
             if (io) options.io = *io;
             if (pin_files) options.pin_files = staging::parse_pin_policy(*pin_files);
             assign_if_given(options.pin_budget_bytes, pin_budget_bytes);
             assign_if_given(options.verify_checksums, verify_checksums);
             assign_if_given(options.stream_value_fences, stream_value_fences);
             assign_if_given(options.strict, strict);
             assign_if_given(options.status_history, status_history);
             options.validate();
             nb::gil_scoped_release release;
             new (self) Queue(std::move(options));
           }, "device"_a = -1, "backend"_a = nb::none(), "cache_policy"_a = nb::none(), "staging_bytes"_a = nb::none(),
           "max_batch"_a = nb::none(), "max_direct_bytes"_a = nb::none(), "decode_on_gpu"_a = nb::none(),
           "decode_threads"_a = nb::none(), "io"_a = nb::none(), "pin_files"_a = nb::none(),
           "pin_budget_bytes"_a = nb::none(), "verify_checksums"_a = nb::none(), "stream_value_fences"_a = nb::none(),
           "strict"_a = nb::none(), "status_history"_a = nb::none())
      .def("add_file", &Queue::add_file, "path"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("close_file", &Queue::close_file, "file"_a, nb::call_guard<nb::gil_scoped_release>())
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
             for (auto id : ids) {
               try {
                 states.emplace_back(queue::to_string(q.status(id).state));
               } catch (const UsageError&) {  // retired (status_history): it finished long ago
                 states.emplace_back("retired");
               }
             }
             return states;
           }, "requests"_a)
      .def("is_signaled", &Queue::is_signaled, "fence"_a)
      .def("wait", &Queue::wait, "fence"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("fence_event", &Queue::fence_event, "fence"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("wait_on_stream", &Queue::wait_on_stream, "fence"_a, "stream"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("drain", &Queue::drain, nb::call_guard<nb::gil_scoped_release>())
      .def("stats", &Queue::stats)
      .def("summarize", [](const Queue& q, const std::vector<queue::RequestId>& ids) { return q.summarize(ids); }, "requests"_a)
      .def("fallbacks", &Queue::fallbacks)
      .def_prop_ro("pinned_host_bytes", &Queue::pinned_host_bytes)
      .def_prop_ro("device_bytes", &Queue::device_bytes)
      .def_prop_ro("has_gpu", &Queue::has_gpu)
      .def_prop_ro("copy_stream", &Queue::copy_stream)
      .def("describe", &Queue::describe);

  nb::class_<engine::SlotDelivery>(m, "SlotDelivery", "A unit handed out by a slot stream: its slot, fence and requests.")
      .def_ro("unit", &engine::SlotDelivery::unit)
      .def_ro("slot", &engine::SlotDelivery::slot)
      .def_ro("fence", &engine::SlotDelivery::fence)
      .def_ro("requests", &engine::SlotDelivery::requests)
      .def_ro("summary", &engine::SlotDelivery::summary)
      .def_ro("ready_seconds", &engine::SlotDelivery::ready_seconds)
      .def_ro("waited_seconds", &engine::SlotDelivery::waited_seconds);

  nb::class_<engine::SlotStream>(m, "FrameSlotStream",
                                 "The engine's slot stream (engine/slot_stream.hpp) over frames of a container: slot s "
                                 "holds field fields[k] at destinations[s][k].")
      .def("__init__", [](engine::SlotStream* self, Queue& queue, const format::Container& container, queue::FileId file,
                          std::vector<std::uint32_t> fields, std::vector<std::vector<std::uintptr_t>> destinations,
                          const std::string& kind, std::uint64_t tag) {
             engine::SlotStreamOptions options;
             options.slots = static_cast<std::uint32_t>(destinations.size());
             options.tag = tag;
             options.name = [](std::uint64_t frame) { return "frame " + std::to_string(frame); };
             new (self) engine::SlotStream(
                 queue, engine::frame_fill(container, file, std::move(fields), std::move(destinations), parse_memory_kind(kind)),
                 std::move(options));
           }, "queue"_a, "container"_a, "file"_a, "fields"_a, "destinations"_a, "kind"_a, "tag"_a = 0,
           nb::keep_alive<1, 2>(), nb::keep_alive<1, 3>())
      .def("play", &engine::SlotStream::play, "order"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("extend", [](engine::SlotStream& s, const std::vector<std::uint64_t>& units) { s.extend(units); }, "units"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("next", [](engine::SlotStream& s, bool issued) {
             return s.next(issued ? engine::Readiness::issued : engine::Readiness::done);
           }, "issued"_a = false, nb::call_guard<nb::gil_scoped_release>(),
           "The next frame (None at the end); issued: hand it out once its GPU work is issued, not done.")
      .def("release", &engine::SlotStream::release, "slot"_a, "consumer"_a = 0, nb::call_guard<nb::gil_scoped_release>())
      .def("stop", &engine::SlotStream::stop, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("in_flight", &engine::SlotStream::in_flight)
      .def_prop_ro("release_waits", &engine::SlotStream::release_waits)
      .def_prop_ro("tag", &engine::SlotStream::tag);
}

}  // namespace headrace::python
