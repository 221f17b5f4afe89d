#include "headrace/codec/chunk_reader.hpp"

#include <memory>

#include "headrace/codec/chain.hpp"
#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/queue/request.hpp"

namespace headrace::codec {
namespace {

// One window of chunks read into one buffer, each chunk at an aligned offset within it. Never
// lets its buffer go while reads into it are in flight, whatever the caller throws.
struct Window {
  std::span<const format::ChunkInfo> chunks;
  std::vector<std::uint64_t> offsets;
  detail::AlignedBuffer buffer;  // kept from window to window: fresh pages would cost a fault each
  std::shared_ptr<io::ReadBatch> batch;

  Window() = default;
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  ~Window() { finish(); }

  void finish() {
    if (batch) batch->wait();
  }

  void start(io::Backend& backend, std::span<const format::ChunkInfo> window_chunks) {
    chunks = window_chunks;
    offsets.clear();
    std::uint64_t size = 0;
    for (const auto& chunk : chunks) {
      offsets.push_back(size);
      size += format::layout::align_up(chunk.stored_size);
    }
    if (buffer.size_bytes() < size) buffer = detail::AlignedBuffer(size);
    std::vector<io::ReadRequest> requests;
    requests.reserve(chunks.size());
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      // Aligned size: the format pads every chunk, so the read stays inside the file.
      requests.push_back({chunks[i].offset, format::layout::align_up(chunks[i].stored_size), buffer.data() + offsets[i]});
    }
    batch = backend.submit(std::move(requests));
  }
};

}  // namespace

ChunkScanReport scan_chunks(const format::Container& container, io::Backend& backend,
                            std::span<const format::ChunkInfo> chunks, const ChunkScanOptions& options) {
  ChunkScanReport report;
  std::size_t next = 0;
  auto take_window = [&] {
    const std::size_t first = next;
    std::uint64_t bytes = 0;
    while (next < chunks.size() && (next == first || bytes + chunks[next].stored_size <= options.window_bytes)) {
      bytes += format::layout::align_up(chunks[next].stored_size);
      ++next;
    }
    return chunks.subspan(first, next - first);
  };
  // Double buffering: the next window is in flight while this one is checked.
  Window windows[2];
  std::size_t current = 0;
  if (!chunks.empty()) windows[current].start(backend, take_window());
  while (!windows[current].chunks.empty()) {
    Window& window = windows[current];
    Window& following = windows[1 - current];
    following.chunks = {};
    if (next < chunks.size()) following.start(backend, take_window());
    window.batch->check();
    if (options.verify) {
      detail::parallel_for(window.chunks.size(), 0, [&](std::uint64_t i) {
        const auto& chunk = window.chunks[i];
        container.verify_chunk(chunk, {window.buffer.data() + window.offsets[i], chunk.stored_size});
      });
    }
    for (const auto& chunk : window.chunks) {
      ++report.chunks;
      report.stored_bytes += chunk.stored_size;
      report.raw_bytes += chunk.raw_size;
    }
    if (options.progress) options.progress(report.stored_bytes);
    window.batch.reset();
    window.chunks = {};
    current = 1 - current;
  }
  return report;
}

std::uint64_t field_raw_bytes(const format::Container& container, std::uint32_t frame, std::uint32_t field) {
  return container.frame_field(frame, field).element_count * container.fields()[field].element_bytes();
}

void read_field(const format::Container& container, io::Backend& backend, std::uint32_t frame, std::uint32_t field,
                std::span<std::byte> destination, bool verify) {
  const std::uint64_t raw_bytes = field_raw_bytes(container, frame, field);
  HEADRACE_EXPECT(destination.size() == raw_bytes, UsageError,
                  container.path() + ": frame " + std::to_string(frame) + " field '" + container.fields()[field].name +
                      "' needs a destination of " + std::to_string(raw_bytes) + " bytes, got " +
                      std::to_string(destination.size()));
  const auto chunks = container.chunks_of(frame, field);
  const std::uint64_t element_bytes = container.fields()[field].element_bytes();

  // Compressed chunks go to staging; raw chunks straight to their place in destination.
  std::vector<std::uint64_t> staging_offsets(chunks.size(), 0);
  std::uint64_t staging_size = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].codec == format::CodecId::none) continue;
    staging_offsets[i] = staging_size;
    staging_size += format::layout::align_up(chunks[i].stored_size);
  }
  detail::AlignedBuffer staging(staging_size);
  auto stored_of = [&](std::size_t i) -> std::byte* {
    return chunks[i].codec == format::CodecId::none ? destination.data() + chunks[i].first_element * element_bytes
                                                    : staging.data() + staging_offsets[i];
  };
  std::vector<io::ReadRequest> requests;
  requests.reserve(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) requests.push_back({chunks[i].offset, chunks[i].stored_size, stored_of(i)});
  backend.submit(std::move(requests))->check();

  detail::parallel_for(chunks.size(), 0, [&](std::uint64_t i) {
    const auto& chunk = chunks[i];
    const std::span<const std::byte> stored(stored_of(i), chunk.stored_size);
    if (verify) container.verify_chunk(chunk, stored);
    if (chunk.codec != format::CodecId::none) {
      const std::string label = queue::chunk_label(container, frame, field, i, chunk);
      chunk_chain(format::coding_of(chunk), label)
          .decode(stored, destination.subspan(chunk.first_element * element_bytes, chunk.raw_size), label);
    }
  });
}

}  // namespace headrace::codec
