// The finishers, one per lane (its flights in dispatch order: read outcomes, checksums and CPU
// decoding, then H2D copies and nvCOMP decoding issued on the copy stream), and the completer (GPU
// batches done, in issue order).
#include <algorithm>
#include <numeric>

#include "queue_impl.hpp"
#include "headrace/codec/gpu/decode_batch.hpp"
#include "headrace/staging/host_to_device_copies.hpp"

namespace headrace::engine {

using format::layout::align_up;
using queue::RequestState;

const std::byte* Queue::Impl::stored_bytes(const Entry& entry) {
  const Request& r = entry.request;
  if (entry.plan.pinned()) return entry.plan.pinned_data + r.offset;
  if (entry.plan.route == Route::direct) return reinterpret_cast<const std::byte*>(r.destination.address);
  return entry.plan.region->data;
}

const std::byte* Queue::Impl::source_end(const Entry& entry) const {
  if (entry.plan.pinned()) return entry.plan.pinned_data + entry.plan.pinned_size;
  return entry.plan.region->data - entry.plan.region->offset + rings_[entry.plan.lane]->capacity_bytes();
}

// A flight whose chunks the GPU checks is held while the next flight's copies are issued, then
// completed: waiting for its sums before issuing more left the copy engine idle while they were taken
// (a 100 M-particle frame's first pass took 81 ms against 59 for its bytes at the H2D rate). One is held
// at most, only while the next flight is DMA'd from page-locked pages (nothing to read), never idle.
void Queue::Impl::finish_loop(Lane lane) {
  std::deque<queue::Flight>& flights = flights_[lane];
  std::optional<IssuedChecks> held;
  while (true) {
    queue::Flight flight;
    {
      std::unique_lock lock(mutex_);
      if (held && flights.empty()) {
        lock.unlock();
        complete_on_device(std::move(*held));
        held.reset();
        continue;
      }
      flights_changed_.wait(lock, [&] { return !flights.empty() || dispatcher_done_; });
      if (flights.empty()) return;
      flight = std::move(flights.front());
      flights.pop_front();
    }
    if (held && flight.pinned < flight.ids.size()) {  // its reads would keep the held flight's consumers waiting
      complete_on_device(std::move(*held));
      held.reset();
    }
    std::optional<IssuedChecks> issued = finish_flight(flight, lane, held ? 1 - held->set : 0);  // the set not held
    if (held) complete_on_device(std::move(*held));
    held = std::move(issued);
  }
}

std::optional<Queue::Impl::IssuedChecks> Queue::Impl::finish_flight(queue::Flight& flight, Lane lane, std::size_t set) {
  std::vector<std::uint64_t> stored_sizes;
  {
    std::lock_guard lock(mutex_);
    stamp_flight_locked(flight.number, &FlightRecord::taken_s, Clock::now());
    for (std::size_t i = 0; i < flight.carried_by.size(); ++i) stored_sizes.push_back(book_.entry(flight.ids[i]).request.stored_size);
  }
  // Waits for the flight's reads: a request's status is its share of the read that carried it.
  std::vector<io::ReadStatus> reads = queue::carried_statuses(flight, stored_sizes);
  const auto read_at = Clock::now();
  std::vector<RequestId> host_work, device_work;
  std::vector<HeldFill> fills;  // what the disk gave for the GPU, into the file's held copy
  {
    std::lock_guard lock(mutex_);
    stamp_flight_locked(flight.number, &FlightRecord::landed_s, read_at);
    for (std::size_t i = flight.ids.size() - flight.pinned; i < flight.ids.size(); ++i) {
      const Entry& entry = book_.entry(flight.ids[i]);
      const std::uint64_t size = entry.plan.pinned_size, offset = entry.request.offset;
      io::ReadStatus status;
      status.bytes_read = offset < size ? std::min(entry.request.stored_size, size - offset) : 0;  // a short "read" fails below
      reads.push_back(std::move(status));
    }
    account_depth_locked();
    for (std::size_t i = 0; i < flight.ids.size(); ++i) {
      const RequestId id = flight.ids[i];
      Entry& entry = book_.entry(id);
      const Request& r = entry.request;
      --reads_in_flight_;
      if (!uses_staging(entry.plan.route)) {
        direct_bytes_ -= r.stored_size;
        room_freed_locked();
      }
      entry.read_at = read_at;
      entry.status.io_s = detail::seconds_between(entry.dispatched_at, read_at);
      if (!reads[i].ok()) {
        fail_locked(id, reads[i].error());
      } else if (reads[i].bytes_read < r.stored_size) {
        fail_locked(id, std::make_exception_ptr(TruncatedFileError(
                            r.label + ": expected " + std::to_string(r.stored_size) + " bytes, read " +
                            std::to_string(reads[i].bytes_read) + " (the file ends first)")));
      } else if (entry.cancel_requested && entry.cancellable_after_read) {
        finish_locked(id, RequestState::cancelled, "cancelled after its read; destination untouched");
      } else if (entry.plan.route == Route::cufile_copy) {
        finish_locked(id, RequestState::done, "");  // cuFile put the bytes in place
      } else if (entry.plan.route == Route::direct || entry.plan.route == Route::host_decode) {
        host_work.push_back(id);
      } else {
        device_work.push_back(id);
        // Bytes the copy holds already (a file read again before its copy was locked) are not copied twice.
        staging::HeldCopy* held = files_[r.file].held.get();
        if (held != nullptr && entry.plan.region && entry.plan.read_route == io::ReadRoute::direct &&
            !held->filled(r.offset, r.stored_size))
          fills.push_back({id, r.file, held, r.offset, entry.plan.region->data, r.stored_size,
                           entry.plan.route == Route::device_copy && r.raw_size == r.stored_size});
      }
    }
  }
  fill_held_copies(fills);
  if (!fills.empty()) {
    // Nearly whole (all but its index and headers): locked now, its pages already in, so that the next
    // pass finds it locked.
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < fills.size(); ++i) {
      const HeldFill& fill = fills[i];
      if (i > 0 && fills[i - 1].copy == fill.copy) continue;  // a flight's fills come file by file: each copy once
      OpenFile& file = files_[fill.file];
      if (file.held.get() == fill.copy && fill.copy->filled_bytes() + fill.copy->size_bytes() / 100 >= fill.copy->size_bytes() &&
          fill.copy->unlocked_fills())
        start_locking_locked(file);
    }
  }
  finish_on_host(host_work);
  if (!host_work.empty()) {
    std::lock_guard lock(mutex_);
    stamp_flight_locked(flight.number, &FlightRecord::checked_s, Clock::now());
  }
  return finish_on_device(device_work, flight.number, lane, set);
}

// Before the copies are issued (the staging goes back once they end). While the page cache's lane is idle,
// the flight's bytes of each held copy are page-locked at once (one registration, its fresh pages faulted in
// by the driver) and each plain copy to the GPU is marked to write its bytes back into the copy by DMA
// (finish_on_device); the rest, and everything while the page cache's lane reads, are copied here. A memory
// copy here cost 0.35 CPU s a GB of a cold pass (0.30 in all by DMA; spread over the checker's threads,
// 0.55); beside the page cache's lane, the registrations held its copies' driver calls and pinned what a
// half-cached file never fills whole (0.85 x KvikIO and 1.14 x its CPU, against 0.96 and 0.8 by memory
// copies; docs/results.md, tenth session).
void Queue::Impl::fill_held_copies(const std::vector<HeldFill>& fills) {
  if (fills.empty()) return;
  bool beside_page_cache = false;
  {
    std::lock_guard lock(mutex_);
    beside_page_cache = book_.has_pending(cache_lane) || !flights_[cache_lane].empty();
  }
  for (std::size_t i = 0; i < fills.size() && !beside_page_cache;) {
    std::uint64_t begin = fills[i].offset, end = fills[i].offset + fills[i].size;
    std::size_t next = i + 1;
    for (; next < fills.size() && fills[next].copy == fills[i].copy; ++next) {
      begin = std::min(begin, fills[next].offset);
      end = std::max(end, fills[next].offset + fills[next].size);
    }
    if (std::any_of(fills.begin() + static_cast<std::ptrdiff_t>(i), fills.begin() + static_cast<std::ptrdiff_t>(next),
                    [](const HeldFill& fill) { return fill.plain; })) {
      try {
        use_context();
        fills[i].copy->lock_range(begin, end - begin);
      } catch (const Error& error) {  // refused: the copy holds nothing more, later passes read the disk
        std::lock_guard lock(mutex_);
        note_fallback_locked(files_[fills[i].file].path + ": not held (" + error.what() + "): later passes read it again");
      }
    }
    i = next;
  }
  std::vector<RequestId> by_dma;
  for (const HeldFill& fill : fills) {
    if (!beside_page_cache && fill.plain && fill.copy->locked(fill.offset, fill.size)) by_dma.push_back(fill.id);
    else fill.copy->fill(fill.offset, fill.bytes, fill.size);
  }
  std::lock_guard lock(mutex_);
  for (const RequestId id : by_dma) book_.entry(id).plan.fills_by_dma = true;
}

// Checksums and CPU decoding of requests whose bytes pass the host (codec/chunk_checks.hpp). Returns
// per request its error (null when fine). Chunks nvCOMP decodes are always checked: it trusts
// its input, and a corrupt frame can read wild addresses and kill the GPU context.
codec::ChunkCheck Queue::Impl::chunk_check_locked(const Entry& entry) const {
  const Request& r = entry.request;
  const Route route = entry.plan.route;
  codec::ChunkCheck chunk;
  chunk.stored = stored_bytes(entry);
  chunk.stored_size = r.stored_size;
  chunk.checksum = r.checksum;
  chunk.verify = options_.verify_checksums || route == Route::device_decode;
  chunk.landed_sum = entry.plan.landed_checksum;
  chunk.chain = entry.plan.chain;
  if (route == Route::host_decode) chunk.decode_into = reinterpret_cast<std::byte*>(r.destination.address);
  if (route == Route::device_cpu_decode) chunk.decode_into = entry.plan.region->data + align_up(r.stored_size);
  chunk.raw_size = r.raw_size;
  chunk.label = r.label;
  chunk.file_offset = r.offset;
  if (entry.plan.pinned()) chunk.pinned_at = std::pair<std::uint64_t, std::uint64_t>{r.file, r.offset};
  return chunk;
}

std::vector<std::exception_ptr> Queue::Impl::check_and_decode(const std::vector<RequestId>& ids, std::vector<double>& decode_seconds,
                                                              const std::vector<bool>& on_gpu) {
  // A deque's elements stay put while enqueue appends, but its index of blocks may move: look the
  // entries up under the lock, then work on them without it (nobody else writes what is read here).
  std::vector<codec::ChunkCheck> chunks;
  chunks.reserve(ids.size());
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      chunks.push_back(chunk_check_locked(book_.entry(ids[i])));
      if (i < on_gpu.size() && on_gpu[i]) chunks.back().verify = false;
    }
  }
  const auto results = checker_.run(chunks);
  std::vector<std::exception_ptr> errors(ids.size());
  decode_seconds.assign(ids.size(), 0.0);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    errors[i] = results[i].error;
    decode_seconds[i] = results[i].decode_seconds;
  }
  return errors;
}

void Queue::Impl::finish_on_host(const std::vector<RequestId>& ids) {
  if (ids.empty()) return;
  std::vector<double> decode_seconds;
  const std::vector<std::exception_ptr> errors = check_and_decode(ids, decode_seconds);
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    book_.entry(ids[i]).status.decode_s = decode_seconds[i];
    if (errors[i]) fail_locked(ids[i], errors[i]);
    else finish_locked(ids[i], RequestState::done, "");
  }
}

// Plain copies are issued before their checksums are checked, so the DMA and the check overlap (checked
// first, a hot page-locked file reached the GPU at the checker's pace, 0.45 x the H2D rate); what the
// consumers wait on, the batch's event, is recorded only after the checks, and a request whose check
// fails fails, its copy waited for first. Chunks to decode are checked before they are copied: nvCOMP
// trusts its input.
std::optional<Queue::Impl::IssuedChecks> Queue::Impl::finish_on_device(const std::vector<RequestId>& ids, std::uint64_t flight,
                                                                       Lane lane, std::size_t set) {
  if (ids.empty()) return std::nullopt;
  auto completion = std::make_unique<Completion>();
  completion->flight = flight;
  completion->decoding = codec::gpu::DecodeBatch(decoders_->limits());
  const auto stream = stream_->handle();
  std::vector<bool> copied_early(ids.size(), false), on_gpu(ids.size(), false);
  bool copies_late = false;  // of chunks decoded: the batch's copy time then spans its checks too
  // check_on_gpu: the plain chunks the GPU checks where they landed, and what their sums are compared with.
  std::vector<codec::gpu::ChunkHasher::Chunk> hashed;
  std::vector<std::pair<std::size_t, codec::ChunkCheck>> gpu_checked;  // (index in ids, its check)
  std::exception_ptr failure;
  struct FillBack {
    std::byte* held;
    gpu::CUdeviceptr destination;
    std::uint64_t size;
  };
  std::vector<FillBack> fills_back;  // the held copy's bytes, from where their copies put them
  {
    std::lock_guard issuing(issue_mutex_);
    staging::HostToDeviceCopies copies;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const Entry& entry = book_.entry(ids[i]);
        if (entry.plan.route != Route::device_copy) {
          copies_late = true;
          continue;
        }
        const auto destination = static_cast<gpu::CUdeviceptr>(entry.request.destination.address);
        copies.add(destination, stored_bytes(entry), entry.request.raw_size, source_end(entry));
        copied_early[i] = true;
        if (entry.plan.fills_by_dma)
          fills_back.push_back({files_[entry.request.file].held->fill_target(entry.request.offset), destination, entry.request.raw_size});
        // A page-cache read was hashed by its reading thread as it landed: only compared, never summed again.
        if (!hasher_ || !entry.request.checksum || entry.plan.landed_checksum || hashed.size() == gpu_checks_a_flight ||
            !codec::gpu::ChunkHasher::hashes({destination, entry.request.raw_size}))
          continue;
        codec::ChunkCheck check = chunk_check_locked(entry);
        if (checker_.checked_before(check)) continue;
        hashed.push_back({destination, entry.request.raw_size});
        gpu_checked.emplace_back(i, std::move(check));
        on_gpu[i] = true;
      }
    }
    if (!copies.runs().empty()) {
      try {
        completion->started.record(stream);
        copies.issue(stream);
        // After the copies, before the batch's event: a consumer may overwrite the destination once it fires.
        for (const FillBack& fill : fills_back)
          gpu::check(gpu::require_driver().cuMemcpyDtoHAsync(fill.held, fill.destination, fill.size, stream), "cuMemcpyDtoHAsync",
                     "a held copy's bytes back from the GPU");
        if (!copies_late) {
          completion->copied.record(stream);
          completion->event.record(stream);  // all of the batch: consumers see it once its checks passed
        }
        if (!hashed.empty()) {
          GpuChecks& checks = *gpu_checks_[lane][set];
          const auto hashing = hash_stream_->handle();
          checks.copied.record(stream);
          const gpu::CudaDriver& cuda = gpu::require_driver();
          gpu::check(cuda.cuStreamWaitEvent(hashing, checks.copied.handle(), 0), "cuStreamWaitEvent");
          hasher_->hash(hashed, checks.sums.pointer(), hashing);
          gpu::check(cuda.cuMemcpyDtoHAsync(checks.landed.data(), checks.sums.pointer(), hashed.size() * sizeof(std::uint64_t), hashing),
                     "cuMemcpyDtoHAsync");
          checks.hashed.record(hashing);
        }
      } catch (const std::exception&) {
        failure = std::current_exception();
      }
    }
  }
  IssuedChecks issued{ids, flight, lane, set, std::move(completion), std::move(copied_early), std::move(on_gpu), copies_late,
                      std::move(gpu_checked), failure};
  if (hashed.empty()) {
    complete_on_device(std::move(issued));
    return std::nullopt;
  }
  return issued;
}

void Queue::Impl::complete_on_device(IssuedChecks held) {
  const std::vector<RequestId>& ids = held.ids;
  const std::uint64_t flight = held.flight;
  std::unique_ptr<Completion>& completion = held.completion;
  const std::vector<bool>& copied_early = held.copied_early;
  const bool copies_late = held.copies_late;
  std::exception_ptr failure = held.failure;
  const auto stream = stream_->handle();
  std::vector<double> decode_seconds;
  std::vector<std::exception_ptr> errors = check_and_decode(ids, decode_seconds, held.on_gpu);
  if (!held.gpu_checked.empty() && !failure) {
    // The host waits for the GPU's sums (its own checks ran meanwhile): consumers see only checked bytes.
    GpuChecks& checks = *gpu_checks_[held.lane][held.set];
    checks.hashed.synchronize();
    const auto* sums = reinterpret_cast<const std::uint64_t*>(checks.landed.data());
    for (std::size_t k = 0; k < held.gpu_checked.size(); ++k)
      errors[held.gpu_checked[k].first] = checker_.compare(held.gpu_checked[k].second, sums[k]);
  }
  const bool any_early = std::find(copied_early.begin(), copied_early.end(), true) != copied_early.end();
  bool early_failed = failure != nullptr;
  for (std::size_t i = 0; i < ids.size(); ++i) early_failed = early_failed || (copied_early[i] && errors[i]);
  // A failed request's staging goes back to the ring at once: its copy must be done reading it.
  if (early_failed && any_early) stream_->synchronize();
  const auto checked_at = Clock::now();
  std::vector<RequestId> issued;
  // The batch's events bracket its own work (its copies on the copy stream, its decoding on a decode
  // stream after them), and the completer sees batches in the order they were issued, with two
  // finishers issuing.
  std::lock_guard issuing(issue_mutex_);
  staging::HostToDeviceCopies copies;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      Entry& entry = book_.entry(ids[i]);
      entry.status.decode_s = decode_seconds[i];
      if (errors[i] || (copied_early[i] && failure)) {
        fail_locked(ids[i], errors[i] ? errors[i] : failure);
        continue;
      }
      const Request& r = entry.request;
      const Route route = entry.plan.route;
      const auto destination = static_cast<gpu::CUdeviceptr>(r.destination.address);
      if (route == Route::device_cpu_decode) {
        copies.add(destination, entry.plan.region->data + align_up(r.stored_size), r.raw_size, source_end(entry));
      } else if (route != Route::device_copy) {
        const gpu::CUdeviceptr scratch = device_scratch_->pointer() + entry.plan.region->offset;
        const codec::gpu::ChainChunk chunk{scratch, {stored_bytes(entry), r.stored_size}, destination, r.raw_size, entry.plan.chain,
                                           r.label};
        try {  // a block table that does not fit fails its chunk here, before anything of it is issued
          (void)completion->decoding.add(chunk);
        } catch (const CodecError&) {
          fail_locked(ids[i], std::current_exception());
          continue;
        }
        completion->decoded.push_back(completion->ids.size());
        // A staged chunk is copied with its region's padding, so that neighbours in staging,
        // neighbours in the scratch twin too, travel as one copy.
        copies.add(scratch, stored_bytes(entry), entry.plan.pinned() ? r.stored_size : align_up(r.stored_size),
                   source_end(entry));
      }
      entry.status.state = RequestState::copying;
      issued.push_back(ids[i]);
      completion->ids.push_back(ids[i]);
      completion->copied_bytes.push_back(route == Route::device_decode ? r.stored_size : r.raw_size);
      completion->decoded_bytes.push_back(route == Route::device_decode ? r.raw_size : 0);
    }
  }
  if (issued.empty()) return;
  failure = nullptr;
  DecodeLane* decode_lane = nullptr;  // where the batch's decoding runs, if it has any
  try {
    if (!any_early) completion->started.record(stream);
    copies.issue(stream);
    if (!any_early || copies_late) completion->copied.record(stream);
    if (completion->decoding.chunk_count() > 0) {
      decode_lane = &*decode_lanes_[next_decode_lane_];
      next_decode_lane_ = (next_decode_lane_ + 1) % decode_lanes_.size();
      const auto decoding = decode_lane->stream.handle();
      gpu::check(gpu::require_driver().cuStreamWaitEvent(decoding, completion->copied.handle(), 0), "cuStreamWaitEvent");
      completion->decoding.issue(*decoders_, decoding);
      completion->event.record(decoding);
      decode_lane->tail.record(decoding);
    } else if (!any_early || copies_late) {
      // Recorded with the early copies when the batch was all of them: here it would wait for the next flight's.
      completion->event.record(stream);
    }
  } catch (const std::exception&) {
    failure = std::current_exception();
  }
  const auto issued_at = Clock::now();
  std::lock_guard lock(mutex_);
  stamp_flight_locked(flight, &FlightRecord::checked_s, checked_at);
  stamp_flight_locked(flight, &FlightRecord::issued_s, issued_at);
  if (failure) {
    // The batch never reaches the completer: wait for what was issued, then fail it.
    if (decode_lane) decode_lane->stream.synchronize();
    stream_->synchronize();
    completion->decoding.give_back(*decoders_);
    for (const RequestId id : issued) fail_locked(id, failure);
    return;
  }
  for (const RequestId id : issued) book_.mark_issued(id);
  completions_.push_back(std::move(completion));
  completions_changed_.notify_all();
}

void Queue::Impl::complete_loop() {
  while (true) {
    std::unique_ptr<Completion> completion;
    {
      std::unique_lock lock(mutex_);
      completions_changed_.wait(lock, [&] { return !completions_.empty() || finishers_done_; });
      if (completions_.empty()) return;
      completion = std::move(completions_.front());
      completions_.pop_front();
    }
    std::exception_ptr gpu_failure;  // the batch's GPU work failed: all of it fails
    double copy_s = 0, decode_s = 0;
    try {
      completion->event.synchronize();
      copy_s = completion->copied.elapsed_ms_since(completion->started) / 1e3;
      decode_s = completion->event.elapsed_ms_since(completion->copied) / 1e3;
    } catch (const std::exception&) {
      gpu_failure = std::current_exception();
    }
    const auto total = [](const std::vector<std::uint64_t>& bytes) {
      return static_cast<double>(std::accumulate(bytes.begin(), bytes.end(), std::uint64_t{0}));
    };
    const double copied_total = total(completion->copied_bytes), decoded_total = total(completion->decoded_bytes);
    // Per request, why decoding failed (null: it decoded).
    std::vector<std::exception_ptr> decode_failures(completion->ids.size());
    const std::vector<std::exception_ptr> failed = completion->decoding.failures();
    for (std::size_t chunk = 0; chunk < failed.size(); ++chunk) decode_failures[completion->decoded[chunk]] = failed[chunk];
    completion->decoding.give_back(*decoders_);
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < completion->ids.size(); ++i) {
      const RequestId id = completion->ids[i];
      RequestStatus& status = book_.entry(id).status;
      // Each request's share of its batch's times, by bytes.
      if (copied_total > 0) status.h2d_s = copy_s * static_cast<double>(completion->copied_bytes[i]) / copied_total;
      if (completion->decoded_bytes[i] != 0)
        status.decode_s = decode_s * static_cast<double>(completion->decoded_bytes[i]) / decoded_total;
      if (gpu_failure) {
        fail_locked(id, gpu_failure);
      } else if (decode_failures[i]) {
        fail_locked(id, decode_failures[i]);
      } else {
        const Entry& entry = book_.entry(id);
        if (entry.plan.fills_by_dma && files_[entry.request.file].held)  // its DMA into the held copy is done too
          files_[entry.request.file].held->record_filled(entry.request.offset, entry.request.raw_size);
        finish_locked(id, RequestState::done, "");
      }
    }
    stamp_flight_locked(completion->flight, &FlightRecord::done_s, Clock::now());
  }
}

}  // namespace headrace::engine
