// queue layer: the request queue. Destinations are addresses here; the Python Queue keeps the
// arrays behind them alive until their requests finish.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

using queue::MemoryKind;
using engine::Queue;

// The engine says what is missing in its terms; the way out in Python's (the Queue's decode_on).
queue::RequestId enqueue_hinted(Queue& q, queue::Request r) {
  const bool decoded_on_gpu = r.destination.kind == MemoryKind::device && q.decodes_on_gpu();
  try {
    return q.enqueue(std::move(r));
  } catch (const UnavailableError& error) {
    if (!decoded_on_gpu) throw;
    throw UnavailableError(std::string(error.what()) + " (decode_on='cpu' decodes on the CPU)");
  }
}

MemoryKind parse_memory_kind(const std::string& text) { return detail::parse_name(queue::memory_kind_names, text, "destination kind"); }

// A slot stream over frames and the slot table its fill reads (engine/frame_fill.hpp), so that Python can
// point a slot it holds at new buffers when a frame's arrays outlive the frame.
struct FrameSlotStream {
  FrameSlotStream(Queue& queue, engine::SlotFill fill, engine::SlotStreamOptions options,
                  std::shared_ptr<engine::SlotDestinations> table)
      : table_(std::move(table)), stream(queue, std::move(fill), std::move(options)) {}

  void rebind(std::uint32_t slot, std::vector<std::uintptr_t> destinations) {
    HEADRACE_EXPECT(slot < table_->size(), UsageError,
                    "rebind: slot " + std::to_string(slot) + " of " + std::to_string(table_->size()));
    HEADRACE_EXPECT(destinations.size() == (*table_)[slot].size(), UsageError,
                    "rebind: " + std::to_string((*table_)[slot].size()) + " fields, " +
                        std::to_string(destinations.size()) + " buffers");
    (*table_)[slot] = std::move(destinations);
  }

 private:
  std::shared_ptr<engine::SlotDestinations> table_;

 public:
  engine::SlotStream stream;
};

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
  m.attr("max_gpu_decode_chunk_bytes") = engine::max_decode_chunk_bytes;
  nb::class_<queue::RequestTotals>(m, "RequestTotals", "Every finished request of a queue summed up.")
      .def_ro("done", &queue::RequestTotals::done)
      .def_ro("failed", &queue::RequestTotals::failed)
      .def_ro("cancelled", &queue::RequestTotals::cancelled)
      .def_ro("stored_bytes", &queue::RequestTotals::stored_bytes)
      .def_ro("raw_bytes", &queue::RequestTotals::raw_bytes)
      .def_ro("bytes_from_cache", &queue::RequestTotals::bytes_from_cache)
      .def_ro("bytes_from_disk", &queue::RequestTotals::bytes_from_disk)
      .def_ro("bytes_pinned", &queue::RequestTotals::bytes_pinned)
      .def_ro("bytes_held", &queue::RequestTotals::bytes_held)
      .def("to_dict", [](nb::handle self) { return fields_dict(self); })
      .def("__repr__", [](nb::handle self) { return fields_repr(self); });

  nb::class_<engine::QueueStats>(m, "QueueStats", "A queue's counters since it was made (bounded: no history).")
      .def_ro("requests", &engine::QueueStats::requests, "finished requests: counts by state, bytes by source")
      .def_ro("backend_submits", &engine::QueueStats::backend_submits)
      .def_ro("backend_reads", &engine::QueueStats::backend_reads)
      .def_ro("staging_waits", &engine::QueueStats::staging_waits)
      .def_ro("disk_lane_flights", &engine::QueueStats::disk_lane_flights)
      .def_ro("cache_lane_flights", &engine::QueueStats::cache_lane_flights)
      .def_ro("checksums_checked", &engine::QueueStats::checksums_checked)
      .def_ro("max_reads_in_flight", &engine::QueueStats::max_reads_in_flight)
      .def_ro("mean_reads_in_flight", &engine::QueueStats::mean_reads_in_flight)
      .def_ro("busy_seconds", &engine::QueueStats::busy_seconds)
      .def_ro("retained_requests", &engine::QueueStats::retained_requests)
      .def("to_dict", [](nb::handle self) { return fields_dict(self); })
      .def("__repr__", [](nb::handle self) { return fields_repr(self); });

  nb::class_<engine::FlightRecord>(m, "FlightRecord",
                                   "One flight of a queue and when each stage of it ended (seconds since the queue was made).")
      .def_ro("number", &engine::FlightRecord::number)
      .def_ro("lane", &engine::FlightRecord::lane, "0: the disk's, 1: the page cache's")
      .def_ro("requests", &engine::FlightRecord::requests)
      .def_ro("reads", &engine::FlightRecord::reads)
      .def_ro("stored_bytes", &engine::FlightRecord::stored_bytes)
      .def_ro("dispatched_s", &engine::FlightRecord::dispatched_s)
      .def_ro("taken_s", &engine::FlightRecord::taken_s)
      .def_ro("landed_s", &engine::FlightRecord::landed_s)
      .def_ro("checked_s", &engine::FlightRecord::checked_s)
      .def_ro("issued_s", &engine::FlightRecord::issued_s)
      .def_ro("done_s", &engine::FlightRecord::done_s)
      .def("to_dict", [](nb::handle self) { return fields_dict(self); })
      .def("__repr__", [](nb::handle self) { return fields_repr(self); });

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
      .def_ro("bytes_held", &queue::RequestSummary::bytes_held)
      .def_ro("bytes_other", &queue::RequestSummary::bytes_other)
      .def_ro("queue_wait_s", &queue::RequestSummary::queue_wait_s)
      .def_ro("io_s", &queue::RequestSummary::io_s)
      .def_ro("transfer_s", &queue::RequestSummary::transfer_s)
      .def_ro("h2d_s", &queue::RequestSummary::h2d_s)
      .def_ro("decode_s", &queue::RequestSummary::decode_s)
      .def(
          "raise_first_failure",
          [](const queue::RequestSummary& summary) {
            if (summary.first_error) rethrow_with_context(summary.first_error, "");
          },
          "Raises the first failed request's error as its own type (ChecksumMismatchError, TruncatedFileError, "
          "SystemCallError, ...); returns when none failed.")
      .def("to_dict", [](nb::handle self) { return fields_dict(self); })
      .def("__repr__", [](nb::handle self) { return fields_repr(self); });

  using engine::QueueOptions;
  nb::class_<QueueOptions>(m, "QueueOptions",
                           "The engine's options (docs/settings.md): QueueOptions() holds the documented defaults, "
                           "QueueOptions.from_environment() those overridden by HEADRACE_<NAME>. validate() raises "
                           "UsageError naming an option out of its range; a Queue validates the options it is given.")
      .def(nb::init<>())
      .def(nb::init<const QueueOptions&>(), "other"_a, "A copy.")
      .def_static("from_environment", &QueueOptions::from_environment, "The defaults overridden by HEADRACE_<NAME>.")
      .def_prop_rw(
          "backend", [](const QueueOptions& o) { return o.backend ? std::string(io::to_string(*o.backend)) : "auto"; },
          [](QueueOptions& o, const std::string& name) {
            if (name == "auto") {
              o.backend = std::nullopt;
              return;
            }
            try {
              o.backend = io::parse_backend_kind(name);
            } catch (const UsageError&) {
              throw UsageError("backend '" + name + "': expected auto|" + detail::choices_of(io::backend_kind_names));
            }
          },
          "auto: the read path; posix|direct|mmap|uring|ram forces a host backend; cufile reads GPU destinations with cuFile")
      .def_prop_rw(
          "cache_policy", [](const QueueOptions& o) { return std::string(io::to_string(o.cache_policy)); },
          [](QueueOptions& o, const std::string& policy) { o.cache_policy = io::parse_cache_policy(policy); },
          "the read path: auto asks the page cache per request, bypass reads O_DIRECT, use reads buffered")
      .def_rw("io", &QueueOptions::io, "the I/O knobs of the backends (Settings)")
      .def_rw("device", &QueueOptions::device, "GPU ordinal for device destinations; -1: host destinations only")
      .def_rw("staging_bytes", &QueueOptions::staging_bytes, "staging, 64 KiB to 1 TiB (pinned with a GPU)")
      .def_rw("max_batch", &QueueOptions::max_batch, "requests per backend submit, 1 to 65,536")
      .def_rw("max_direct_bytes", &QueueOptions::max_direct_bytes, "bytes in flight straight into host destinations")
      .def_rw("read_ahead_bytes", &QueueOptions::read_ahead_bytes,
              "cache policy keep: how far the kernel reads a kept file ahead of its reads, 0 (not) to 1 TiB")
      .def_rw("decode_threads", &QueueOptions::decode_threads, "CPU checksum and decoding threads; 0: one per core")
      .def_prop_rw(
          "decode_on", [](const QueueOptions& o) { return std::string(detail::name_of(engine::decode_on_names, o.decode_on_gpu)); },
          [](QueueOptions& o, const std::string& where) { o.decode_on_gpu = detail::parse_name(engine::decode_on_names, where, "decode_on"); },
          "where chunks for GPU destinations are decoded: gpu (nvCOMP) or cpu")
      .def_prop_rw(
          "pin_files", [](const QueueOptions& o) { return std::string(staging::to_string(o.pin_files)); },
          [](QueueOptions& o, nb::handle policy) {
            if (nb::isinstance<bool>(policy)) {
              o.pin_files = nb::cast<bool>(policy) ? staging::PinPolicy::on : staging::PinPolicy::off;
            } else if (nb::isinstance<nb::str>(policy)) {
              o.pin_files = staging::parse_pin_policy(nb::cast<std::string>(policy));
            } else {
              throw nb::type_error("pin_files takes auto, on, off or a bool");
            }
          },
          "page-lock files for DMA from their pages: auto (cached whole, within pin_budget_bytes), on/True, off/False")
      .def_rw("pin_budget_bytes", &QueueOptions::pin_budget_bytes, "bytes auto keeps page-locked; 0: a quarter of the memory")
      .def_rw("verify_checksums", &QueueOptions::verify_checksums, "check each chunk's checksum (always before nvCOMP)")
      .def_prop_rw(
          "check_on", [](const QueueOptions& o) { return std::string(detail::name_of(engine::check_on_names, o.check_on_gpu)); },
          [](QueueOptions& o, const std::string& where) { o.check_on_gpu = detail::parse_name(engine::check_on_names, where, "check_on"); },
          "where plain chunks copied to a GPU are checked: host (beside the DMA) or gpu (where they landed)")
      .def_rw("staging_huge_pages", &QueueOptions::staging_huge_pages,
              "pinned staging in transparent huge pages (made faster), else cuMemHostAlloc")
      .def_rw("stream_value_fences", &QueueOptions::stream_value_fences, "fire-and-forget fences (needs decode_on='cpu')")
      .def_rw("strict", &QueueOptions::strict, "every fallback fails instead of being taken and reported")
      .def_rw("status_history", &QueueOptions::status_history, "finished requests whose status is kept, at least 1,024")
      .def("validate", &QueueOptions::validate)
      .def("page_cache_staging_bytes", &QueueOptions::page_cache_staging_bytes,
           "The staging ring of reads the page cache serves: a queue holds at most staging_bytes + this.")
      .def("to_dict", [](nb::handle self) { return fields_dict(self); }, "The options by name (io as a dict).")
      .def("__repr__", [](nb::handle self) { return fields_repr(self); });

  nb::class_<Queue>(m, "Queue", "The request queue (see headrace.Queue for the typed API).")
      .def("__init__", [](Queue* self, QueueOptions options) {
             options.validate();
             nb::gil_scoped_release release;
             new (self) Queue(std::move(options));
           }, "options"_a)
      .def("add_file",
           [](Queue& q, const std::string& path, std::optional<std::string> cache_policy, const std::string& why) {
             engine::FileOptions file_options;
             if (cache_policy) file_options.cache_policy = io::parse_cache_policy(*cache_policy);
             file_options.why = why;
             nb::gil_scoped_release release;
             return q.add_file(path, file_options);
           },
           "path"_a, "cache_policy"_a = nb::none(), "why"_a = "",
           "The file's id; cache_policy (auto, bypass, use, keep): its own instead of the queue's, for the reason why "
           "(describe() and explain() say it). The first add's stand while the file is open.")
      .def("close_file", &Queue::close_file, "file"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("close_path", &Queue::close_path, "path"_a, nb::call_guard<nb::gil_scoped_release>(),
           "Closes every open version of the file (its pages unlocked); how many there were.")
      .def("enqueue", [](Queue& q, queue::FileId file, std::uint64_t offset, std::uint64_t stored_size, std::uint64_t raw_size,
                         std::uintptr_t destination, const std::string& kind, const std::string& codec,
                         std::optional<std::uint64_t> checksum, int priority, std::uint64_t tag, const std::string& label) {
             queue::Request r;
             r.file = file;
             r.offset = offset;
             r.stored_size = stored_size;
             r.raw_size = raw_size;
             r.coding = codec;
             r.checksum = checksum;
             r.destination = {parse_memory_kind(kind), destination, raw_size};
             r.priority = priority;
             r.tag = tag;
             r.label = label;
             return enqueue_hinted(q, std::move(r));
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
               ids.push_back(enqueue_hinted(q, std::move(r)));
             }
             return ids;
           }, "file"_a, "container"_a, "frame"_a, "field"_a, "destination"_a, "kind"_a = "host", "priority"_a = 0, "tag"_a = 0,
           "Enqueues every chunk of one field of one frame, checksums verified, into destination.")
      .def("explain_frames", [](const Queue& q, queue::FileId file, const format::Container& container, std::uint32_t field,
                                const std::string& kind) {
             // Per frame, the field's chunks grouped by (read, transfer): a long series answers in one call.
             const auto memory = parse_memory_kind(kind);
             nb::list frames;
             nb::dict details;
             std::string why;
             for (std::uint32_t frame = 0; frame < container.frames().size(); ++frame) {
               std::map<std::pair<std::string, std::string>, std::array<std::uint64_t, 3>> groups;  // chunks, stored, raw
               for (const auto& chunk : container.chunks_of(frame, field)) {
                 const engine::RouteExplanation e = q.explain(queue::chunk_request(file, chunk, {memory, 1, chunk.raw_size}));
                 auto& group = groups[{e.read, e.transfer}];
                 group[0] += 1, group[1] += chunk.stored_size, group[2] += chunk.raw_size;
                 details[nb::str(e.read.c_str())] = e.read_detail;
                 details[nb::str(e.transfer.c_str())] = e.transfer_detail;
                 why = e.why;
               }
               nb::list routes;
               for (const auto& [key, sums] : groups)
                 routes.append(nb::make_tuple(key.first, key.second, sums[0], sums[1], sums[2]));
               frames.append(routes);
             }
             return nb::make_tuple(frames, details, why);
           }, "file"_a, "container"_a, "field"_a, "kind"_a = "host",
           "How each frame's chunks of one field would be served now: per frame a list of (read, transfer, chunks, "
           "stored bytes, raw bytes); the words for each key; why (the file's pin decision and cache choice).")
      .def("enqueue_chunk_list", [](Queue& q, queue::FileId file, const format::Container& container, std::uint32_t frame,
                                    std::uint32_t field, const std::vector<std::uint64_t>& chunks,
                                    const std::vector<std::uintptr_t>& destinations, const std::string& kind, int priority,
                                    std::uint64_t tag) {
             HEADRACE_EXPECT(chunks.size() == destinations.size(), UsageError,
                             "one destination a chunk: " + std::to_string(chunks.size()) + " chunks, " +
                                 std::to_string(destinations.size()) + " destinations");
             const auto memory = parse_memory_kind(kind);
             const auto all = container.chunks_of(frame, field);
             const std::uint64_t first = container.frame_field(frame, field).first_chunk;
             std::vector<queue::RequestId> ids;
             for (std::size_t k = 0; k < chunks.size(); ++k) {
               HEADRACE_EXPECT(chunks[k] < all.size(), UsageError,
                               "chunk " + std::to_string(chunks[k]) + " of frame " + std::to_string(frame) + ": it has " +
                                   std::to_string(all.size()) + " chunks");
               const auto& chunk = all[chunks[k]];
               queue::Request r = queue::chunk_request(file, chunk, {memory, destinations[k], chunk.raw_size});
               r.priority = priority;
               r.tag = tag;
               r.label = queue::chunk_label(container, frame, field, first + chunks[k], chunk);
               ids.push_back(enqueue_hinted(q, std::move(r)));
             }
             return ids;
           }, "file"_a, "container"_a, "frame"_a, "field"_a, "chunks"_a, "destinations"_a, "kind"_a = "host", "priority"_a = 0,
           "tag"_a = 0,
           "Enqueues chunks (their positions among the frame's chunks of the field), each into its own destination, "
           "checksums verified.")
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
      .def("flight_timeline", &Queue::flight_timeline, "the newest flights, oldest first: where a pass spends its time")
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

  nb::class_<FrameSlotStream>(m, "FrameSlotStream",
                              "The engine's slot stream (engine/slot_stream.hpp) over frames of a container: slot s "
                              "holds field fields[k] at destinations[s][k]; rebind() points a held slot elsewhere.")
      .def("__init__", [](FrameSlotStream* self, Queue& queue, const format::Container& container, queue::FileId file,
                          std::vector<std::uint32_t> fields, engine::SlotDestinations destinations,
                          const std::string& kind, std::uint64_t tag) {
             engine::SlotStreamOptions options;
             options.slots = static_cast<std::uint32_t>(destinations.size());
             options.tag = tag;
             options.name = [](std::uint64_t frame) { return "frame " + std::to_string(frame); };
             auto table = std::make_shared<engine::SlotDestinations>(std::move(destinations));
             new (self) FrameSlotStream(queue, engine::frame_fill(container, file, std::move(fields), table,
                                                                  parse_memory_kind(kind)),
                                        std::move(options), table);
           }, "queue"_a, "container"_a, "file"_a, "fields"_a, "destinations"_a, "kind"_a, "tag"_a = 0,
           nb::keep_alive<1, 2>(), nb::keep_alive<1, 3>())
      .def("play", [](FrameSlotStream& s, std::vector<std::uint64_t> order) { s.stream.play(std::move(order)); }, "order"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("extend", [](FrameSlotStream& s, const std::vector<std::uint64_t>& units) { s.stream.extend(units); }, "units"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("next", [](FrameSlotStream& s, bool issued) {
             return s.stream.next(issued ? engine::Readiness::issued : engine::Readiness::done);
           }, "issued"_a = false, nb::call_guard<nb::gil_scoped_release>(),
           "The next frame (None at the end); issued: hand it out once its GPU work is issued, not done.")
      .def("release", [](FrameSlotStream& s, std::uint32_t slot, std::uintptr_t consumer) { s.stream.release(slot, consumer); },
           "slot"_a, "consumer"_a = 0, nb::call_guard<nb::gil_scoped_release>())
      .def("rebind", &FrameSlotStream::rebind, "slot"_a, "destinations"_a,
           "Points a slot the caller holds (handed out, not yet released) at other buffers, one per field: its "
           "refills go there.")
      .def("stop", [](FrameSlotStream& s) { s.stream.stop(); }, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("in_flight", [](const FrameSlotStream& s) { return s.stream.in_flight(); })
      .def_prop_ro("release_waits", [](const FrameSlotStream& s) { return s.stream.release_waits(); })
      .def_prop_ro("tag", [](const FrameSlotStream& s) { return s.stream.tag(); });
}

}  // namespace headrace::python
