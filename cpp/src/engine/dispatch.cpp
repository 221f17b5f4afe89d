// The dispatcher: submitted requests in priority order, each given its lane (disk or page cache), its
// staging in that lane's ring (or its destination), gathered into flights of one lane, batched backend
// submits per file and route.
#include <algorithm>

#include "queue_impl.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/io/read_coalescing.hpp"

namespace headrace::engine {
namespace {

using queue::ReadSource;
using queue::RequestState;

ReadSource source_of(io::ReadRoute route) {
  switch (route) {
    case io::ReadRoute::cached: return ReadSource::page_cache;
    case io::ReadRoute::direct:
    case io::ReadRoute::kept:
    case io::ReadRoute::forced_direct: return ReadSource::disk;
    case io::ReadRoute::forced_buffered: return ReadSource::buffered;
  }
  return ReadSource::none;
}

// nvCOMP's items a chunk decoded on the GPU takes: one a block of its codec (one for a chunk in one
// stream), counted on its raw bytes, which bound the bytes its codec sees.
std::uint64_t decode_items(const Entry& entry) {
  const std::uint64_t block = entry.plan.chain != nullptr && entry.plan.chain->codec() != nullptr
                                  ? entry.plan.chain->codec()->block_bytes()
                                  : 0;
  return block == 0 ? 1 : (entry.request.raw_size + block - 1) / block;
}

// The most bytes of a flight of copies DMA'd from page-locked pages: 16 chunks of 4 MiB.
constexpr std::uint64_t stageless_flight_bytes = std::uint64_t{64} << 20;
// The widest gap between two chunks that one read takes with them: a container's chunk alignment.
constexpr std::uint64_t join_gap = 4096;

// Reads of one flight by (file, way): the file's buffered (or forced) backend, its O_DIRECT one, its
// kept one, cuFile.
enum Way : std::size_t { cached_way, direct_way, kept_way, cufile_way, ways };

Way way_of(io::ReadRoute route) {
  if (route == io::ReadRoute::direct) return direct_way;
  return route == io::ReadRoute::kept ? kept_way : cached_way;
}

}  // namespace

Lane Queue::Impl::plan_lane_locked(Entry& entry, std::optional<io::ReadRoute> asked) const {
  const Request& r = entry.request;
  Plan& plan = entry.plan;
  // Where its bytes are (mincore, once per request): the page cache's lane takes what it holds and
  // what is DMA'd from page-locked files, but GPU decoding (the disk ring's scratch twin) and regions
  // larger than a quarter of its ring.
  if (plan.uses_read_path()) {
    const io::FileReadPath& reads = *files_[r.file].reads;
    plan.read_route = asked ? *asked : reads.route(r.offset, r.stored_size);
    reads.will_read(*plan.read_route, r.offset, r.stored_size);
  }
  const bool cached = plan.pinned() || plan.read_route == io::ReadRoute::cached;
  const bool fits = !plan.needs_region() ||
                    staging_bytes_of(r, plan.route) <= rings_[cache_lane]->capacity_bytes() / 4;
  plan.lane = cached && plan.route != Route::device_decode && fits ? cache_lane : disk_lane;
  return plan.lane;
}

// The page cache's reads are memory copies on the backend's threads: each thread hashes what it read
// while the bytes are in its cache, so the finisher does not pass over them again.
void Queue::Impl::hash_as_they_land_locked(const std::vector<RequestId>& ids, io::CoalescedReads& joined) {
  struct Landing {
    Plan* plan;
    const std::byte* bytes;
    std::uint64_t size;
  };
  if (!options_.verify_checksums) return;
  std::vector<std::vector<Landing>> by_read(joined.reads.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    Entry& entry = book_.entry(ids[k]);
    if (!entry.request.checksum) continue;
    const auto [read, offset] = joined.carried_by[k];
    by_read[read].push_back({&entry.plan, static_cast<const std::byte*>(joined.reads[read].destination) + offset,
                             entry.request.stored_size});
  }
  for (std::size_t read = 0; read < by_read.size(); ++read) {
    if (by_read[read].empty()) continue;
    joined.reads[read].on_landed = [landings = std::move(by_read[read])] {
      for (const Landing& landing : landings) landing.plan->landed_checksum = format::xxh3_64({landing.bytes, landing.size});
    };
  }
}

void Queue::Impl::dispatch_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_.wait(lock, [&] { return stopping_ || book_.has_pending(); });
    if (!book_.has_pending()) return;  // stopping, and nothing left
    // The lane whose next request comes first sends a flight; while its staging is full, the other
    // lane's requests go meanwhile, so the disk never idles behind reads of the page cache (a cached
    // frame first in a half-cached file) and the page cache never waits behind the disk.
    const auto first = static_cast<Lane>(book_.first_pending_list());
    const auto second = first == disk_lane ? cache_lane : disk_lane;
    if (send_flight_locked(first, lock)) continue;
    if (book_.has_pending(second) && send_flight_locked(second, lock)) continue;
    // Neither lane can start now: wait for staging or direct bytes to come back, or for new requests.
    ++stats_.staging_waits;
    const std::uint64_t seen = dispatch_events_;
    dispatcher_stalled_ = true;
    work_.wait(lock, [&] { return dispatch_events_ != seen; });
    dispatcher_stalled_ = false;
  }
}

bool Queue::Impl::send_flight_locked(Lane lane, std::unique_lock<std::mutex>& lock) {
  queue::Flight flight;
  const std::size_t lists = files_.size() * ways;
  std::vector<std::vector<io::ReadRequest>> reads(lists);
  std::vector<std::vector<bool>> staged(lists);  // its memory gap is staging padding
  std::vector<std::vector<RequestId>> read_ids(lists);
  std::vector<RequestId> pinned_ids;
  std::uint64_t flight_bytes = 0;
  // max_batch bounds the reads of a backend submit; a copy DMA'd from page-locked pages reads nothing,
  // so it counts only toward the flight's bytes (128 KB chunks: flights of 16 MiB, not 8). Chunks
  // decoded on the GPU fit one decoder call (its raw bytes and nvCOMP items: the finisher holds a
  // codec's decoders until the flight is issued, and the pool has two per codec) and count toward
  // max_batch only where they start a read of their own: 64 KiB GDeflate chunks, 64 to a flight,
  // made 1,132 flights of a 2.4 GB frame, read at half the disk's rate (issue 38).
  std::size_t taken = 0, batched = 0, dropped = 0;
  std::uint64_t decoded_raw_bytes = 0, decoded_items = 0;
  std::optional<std::pair<FileId, std::uint64_t>> decoded_end;  // where the last decoded chunk's read ends
  staging::StagingRing& ring = *rings_[lane];
  // A flight is finished as a whole (its reads, then their checks and copies), so one flight must
  // not hold all of its ring, or the disk would idle while it is checked: at most a quarter.
  const std::uint64_t flight_limit = std::max<std::uint64_t>(ring.capacity_bytes() / 4, 1);
  // DMA from page-locked pages takes no staging: such a flight may be larger, so that its chunks are
  // checked on all the checker's threads at once (flights of a quarter of the ring, four 4 MiB chunks,
  // kept most of them idle and a hot file reached the GPU at 0.45 x the H2D rate).
  const std::uint64_t stageless_limit = std::max(flight_limit, stageless_flight_bytes);
  // Chunks decoded from page-locked pages or a held copy read nothing, and nvCOMP decodes a call's chunks
  // side by side: flights of a quarter of the ring (16 zstd chunks of 4 MiB) decoded a held file at 2.2
  // GB/s where nvCOMP decodes 64 such chunks at 8.9 on the H200; half of it, 4.6 (one flight decodes while
  // the next copies); the whole ring, 4.2 (flights one after the other).
  const std::uint64_t pinned_decode_limit = std::max(flight_limit, ring.capacity_bytes() / 2);
  while (book_.has_pending(lane) && batched < options_.max_batch) {
    const RequestId id = book_.next_pending(lane);
    Entry& entry = book_.entry(id);
    if (entry.status.finished() || stopping_) {
      book_.pop_pending(lane);
      finish_locked(id, RequestState::cancelled, "cancelled: the queue was destroyed");
      ++dropped;
      continue;
    }
    const Request& r = entry.request;
    const bool stageless = entry.plan.pinned() && !entry.plan.needs_region();
    const bool pinned_decode = entry.plan.pinned() && entry.plan.route == Route::device_decode;
    if (taken > 0 && flight_bytes + r.stored_size > (stageless ? stageless_limit : pinned_decode ? pinned_decode_limit : flight_limit))
      break;
    // The page cache's reads are finished one backend task at a time: a flight's copies are issued
    // once all its reads landed, and a flight of four held a third of the ring while it waited for
    // its slowest read and its copies (the flight timeline of a hot file not page-locked).
    const bool reads_page_cache = lane == cache_lane && !entry.plan.pinned();
    if (taken > 0 && reads_page_cache && flight_bytes + r.stored_size > options_.io.task_size_bytes) break;
    const bool decoded = entry.plan.route == Route::device_decode;
    const std::uint64_t items = decoded ? decode_items(entry) : 0;
    if (taken > 0 && decoded &&
        (decoded_raw_bytes + r.raw_size > decoder_total_bytes || decoded_items + items > max_decode_items))
      break;
    void* target = nullptr;
    if (stageless) {
      // nothing to reserve: the DMA reads the file's pages
    } else if (!uses_staging(entry.plan.route)) {
      if (direct_bytes_ + r.stored_size > options_.max_direct_bytes && direct_bytes_ > 0) break;
      direct_bytes_ += r.stored_size;
      target = reinterpret_cast<void*>(r.destination.address);  // a device address for cuFile
    } else {
      std::optional<staging::Region> region = ring.try_acquire(staging_bytes_of(r, entry.plan.route));
      if (!region) break;  // what is taken goes; the finishers free staging
      entry.plan.region = region;
      target = region->data;
    }
    book_.pop_pending(lane);
    flight_bytes += r.stored_size;
    ++taken;
    // Chunks lie 4 KiB-aligned, a gap of padding between most of them, which the read joins (read_coalescing).
    const bool joins_read = decoded && !entry.plan.pinned() && decoded_end && decoded_end->first == r.file &&
                            r.offset >= decoded_end->second && r.offset - decoded_end->second <= join_gap;
    if (!(entry.plan.pinned() && (entry.plan.route == Route::device_copy || decoded)) && !joins_read) ++batched;
    if (decoded) {
      decoded_raw_bytes += r.raw_size;
      decoded_items += items;
      decoded_end = std::pair{r.file, r.offset + r.stored_size};
    }
    if (entry.plan.pinned()) {
      book_.dispatch(id, entry.plan.held ? ReadSource::held : ReadSource::pinned);
      pinned_ids.push_back(id);
    } else {
      std::size_t way = cufile_way;
      if (entry.plan.route == Route::cufile_copy) {
        book_.dispatch(id, ReadSource::cufile);
      } else {
        book_.dispatch(id, source_of(*entry.plan.read_route));
        way = way_of(*entry.plan.read_route);
      }
      const std::size_t list = std::size_t{r.file} * ways + way;
      reads[list].push_back({r.offset, r.stored_size, target});
      staged[list].push_back(entry.plan.region.has_value());
      read_ids[list].push_back(id);
    }
    account_depth_locked();
    ++reads_in_flight_;
  }
  if (taken == 0) return dropped > 0;  // cancelled requests count as progress: look again
  stats_.max_reads_in_flight = std::max(stats_.max_reads_in_flight, reads_in_flight_);
  ++stats_.backend_submits;
  ++(lane == cache_lane ? stats_.cache_lane_flights : stats_.disk_lane_flights);
  // Order of ids in the flight = order of the reads the finisher gets back: batch by batch.
  std::vector<std::pair<io::Backend*, std::vector<io::ReadRequest>>> batches;
  std::size_t reads_before = 0;
  for (std::size_t list = 0; list < lists; ++list) {
    if (reads[list].empty()) continue;
    const OpenFile& file = files_[list / ways];
    const auto way = static_cast<Way>(list % ways);
    io::Backend* backend = way == cufile_way  ? static_cast<io::Backend*>(file.cufile.get())
                           : way == direct_way ? &file.reads->backend(io::ReadRoute::direct)
                           : way == kept_way   ? &file.reads->backend(io::ReadRoute::kept)
                                               : &file.reads->backend(io::ReadRoute::cached);
    io::CoalescingLimits limits{.file_size = backend->file_size(), .max_gap_bytes = join_gap};
    // A joined read larger than the backend's task is split across its threads, and the thread
    // landing last would hash every chunk of it alone: the page cache's reads join up to one task.
    if (lane == cache_lane) limits.max_read_bytes = options_.io.task_size_bytes;
    auto joined = io::coalesce_reads(reads[list], staged[list], limits);
    if (lane == cache_lane) hash_as_they_land_locked(read_ids[list], joined);
    for (auto [read, offset] : joined.carried_by) flight.carried_by.emplace_back(reads_before + read, offset);
    reads_before += joined.reads.size();
    stats_.backend_reads += joined.reads.size();
    flight.ids.insert(flight.ids.end(), read_ids[list].begin(), read_ids[list].end());
    batches.emplace_back(backend, std::move(joined.reads));
  }
  flight.ids.insert(flight.ids.end(), pinned_ids.begin(), pinned_ids.end());
  flight.pinned = pinned_ids.size();
  flight.number = flights_sent_++;
  FlightRecord& record = timeline_[flight.number % flight_timeline_capacity];
  record = {.number = flight.number, .lane = static_cast<std::uint8_t>(lane),
            .requests = static_cast<std::uint32_t>(flight.ids.size()), .reads = static_cast<std::uint32_t>(reads_before),
            .stored_bytes = flight_bytes};
  record.dispatched_s = detail::seconds_between(made_at_, Clock::now());
  lock.unlock();
  for (auto& [backend, requests] : batches) flight.batches.push_back(backend->submit(std::move(requests)));
  lock.lock();
  flights_[lane].push_back(std::move(flight));
  flights_changed_.notify_all();
  return true;
}

}  // namespace headrace::engine
