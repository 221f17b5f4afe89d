// What one request of the queue asks for, and what became of it.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "headrace/detail/enum_names.hpp"
#include "headrace/format/container.hpp"

namespace headrace::queue {

using RequestId = std::uint64_t;
using FenceId = std::uint64_t;
using FileId = std::uint32_t;

enum class MemoryKind : std::uint8_t { host, device };
inline constexpr detail::EnumNames<MemoryKind, 2> memory_kind_names{{{MemoryKind::host, "host"}, {MemoryKind::device, "device"}}};

// Where the request's raw (decoded) bytes go: a host pointer or a CUdeviceptr of the queue's GPU.
struct Destination {
  MemoryKind kind = MemoryKind::host;
  std::uintptr_t address = 0;
  std::uint64_t size_bytes = 0;  // must equal the request's raw size
};

struct Request {
  FileId file = 0;
  std::uint64_t offset = 0;       // in the file; 4096-aligned for container chunks
  std::uint64_t stored_size = 0;  // bytes on disk
  std::uint64_t raw_size = 0;     // bytes at the destination (== stored_size for codec none)
  // How the stored bytes decode, as format::coding_of() writes it: "none", a plain codec's name or a
  // chain's stored text (docs/format.md 5.7, 5.10); the engine resolves it once (codec::chunk_chain).
  std::string coding = "none";
  std::optional<std::uint64_t> checksum;  // xxh3-64 of the stored bytes, checked when given
  Destination destination;
  int priority = 0;       // higher is served first; equal priorities in enqueue order
  std::uint64_t tag = 0;  // cancel_tag() cancels every request with this tag
  std::string label;      // names it in errors: "data.hrc: offset 8192: frame 3 field 'particles' chunk 12"
};

// A request for one container chunk: offset, sizes, coding and checksum from the index.
[[nodiscard]] inline Request chunk_request(FileId file, const format::ChunkInfo& chunk, Destination destination) {
  Request r;
  r.file = file;
  r.offset = chunk.offset;
  r.stored_size = chunk.stored_size;
  r.raw_size = chunk.raw_size;
  r.coding = format::coding_of(chunk);
  r.checksum = chunk.checksum;
  r.destination = destination;
  return r;
}

// How errors name a container chunk: "data.hrc: offset 8192: frame 3 field 'particles' chunk 12".
[[nodiscard]] inline std::string chunk_label(const format::Container& container, std::uint32_t frame, std::uint32_t field,
                                             std::uint64_t chunk_number, const format::ChunkInfo& chunk) {
  return container.path() + ": offset " + std::to_string(chunk.offset) + ": frame " + std::to_string(frame) + " field '" +
         container.fields()[field].name + "' chunk " + std::to_string(chunk_number);
}

// A request for size bytes at offset of a file, uncompressed.
[[nodiscard]] inline Request range_request(FileId file, std::uint64_t offset, std::uint64_t size, MemoryKind kind,
                                           std::uintptr_t address) {
  Request r;
  r.file = file;
  r.offset = offset;
  r.stored_size = r.raw_size = size;
  r.destination = {kind, address, size};
  return r;
}

// Where a request's stored bytes came from.
enum class ReadSource : std::uint8_t {
  none,        // not read (yet)
  page_cache,  // the read path found its pages cached: buffered read
  disk,        // read from the disk: O_DIRECT (the read path, a forced O_DIRECT backend), or kept (cache policy keep)
  buffered,    // a forced buffered backend: the kernel served it from the cache or the disk
  pinned,      // DMA from the file's page-locked pages
  cufile,      // cuFile into GPU memory
  held,        // DMA from the copy the engine kept of bytes it read from the disk earlier
};
inline constexpr detail::EnumNames<ReadSource, 7> read_source_names{{{ReadSource::none, "none"},
                                                                     {ReadSource::page_cache, "page-cache"},
                                                                     {ReadSource::disk, "disk"},
                                                                     {ReadSource::buffered, "buffered"},
                                                                     {ReadSource::pinned, "pinned"},
                                                                     {ReadSource::cufile, "cufile"},
                                                                     {ReadSource::held, "held"}}};
[[nodiscard]] constexpr const char* to_string(ReadSource source) noexcept { return detail::name_of(read_source_names, source); }

enum class RequestState : std::uint8_t {
  enqueued,   // not yet submitted
  submitted,  // waiting for staging or the backend
  reading,    // its read is in flight
  copying,    // on the GPU stream: H2D and decode
  done,
  failed,
  cancelled,
};
inline constexpr detail::EnumNames<RequestState, 7> request_state_names{{{RequestState::enqueued, "enqueued"},
                                                                         {RequestState::submitted, "submitted"},
                                                                         {RequestState::reading, "reading"},
                                                                         {RequestState::copying, "copying"},
                                                                         {RequestState::done, "done"},
                                                                         {RequestState::failed, "failed"},
                                                                         {RequestState::cancelled, "cancelled"}}};
[[nodiscard]] constexpr const char* to_string(RequestState state) noexcept { return detail::name_of(request_state_names, state); }

struct RequestStatus {
  RequestState state = RequestState::enqueued;
  std::string message;  // why it failed
  std::exception_ptr error;  // a failed request's error as thrown, its type kept (null otherwise)
  std::uint64_t completion_index = 0;  // order in which requests finished (done, failed or cancelled)
  // Seconds: submit -> read issued (queue wait), read issued -> read done (I/O), read done -> bytes
  // in place (H2D and decode, or CPU decode).
  double queue_wait_s = 0, io_s = 0, transfer_s = 0;
  // Within transfer: its copy to the GPU (its share, by bytes, of its batch's copies, timed by CUDA
  // events) and its decoding (on the CPU, or its share by raw bytes of its batch's nvCOMP time).
  double h2d_s = 0, decode_s = 0;
  ReadSource source = ReadSource::none;  // where its stored bytes came from
  [[nodiscard]] bool finished() const noexcept {
    return state == RequestState::done || state == RequestState::failed || state == RequestState::cancelled;
  }
};

}  // namespace headrace::queue
