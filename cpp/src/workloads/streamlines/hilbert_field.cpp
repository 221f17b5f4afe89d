#include "headrace/workloads/streamlines/hilbert_field.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/format/writer.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"

namespace headrace::workloads::streamlines {

void HilbertLayout::check() const {
  HEADRACE_EXPECT(bits >= 1 && bits <= 20, UsageError, "Hilbert partitions of 2^1 to 2^20 points a side, got 2^" + std::to_string(bits));
  const std::int32_t largest = std::max({grid.dims[0], grid.dims[1], grid.dims[2]});
  for (int axis = 0; axis < 3; ++axis)
    HEADRACE_EXPECT(grid.dims[axis] >= 2 && partition() <= static_cast<std::uint32_t>(largest), UsageError,
                    "grid dims " + std::to_string(grid.dims[0]) + "x" + std::to_string(grid.dims[1]) + "x" +
                        std::to_string(grid.dims[2]) + " (2 or more points a side) in Hilbert partitions of " +
                        std::to_string(partition()) + " (no larger than the grid's largest side)");
}

HilbertLayout hilbert_layout_of(const format::Container& container) {
  expect_layout(container, "hilbert");
  HilbertLayout result;
  result.grid = grid_geometry_of(container);
  const auto bits = integers_of(container, "hilbert_bits");
  HEADRACE_EXPECT(bits.size() == 1, UsageError, container.path() + ": expected one integer in attribute 'hilbert_bits'");
  result.bits = static_cast<std::uint32_t>(bits.front());
  result.check();
  return result;
}

void check_unit_bytes(std::uint64_t unit_bytes) {
  HEADRACE_EXPECT(unit_bytes > 0 && unit_bytes % point_bytes == 0, UsageError,
                  "Hilbert units hold whole points: " + std::to_string(unit_bytes) +
                      " bytes is not a multiple of 12 (use a multiple of 3 pages)");
}

FieldRange contiguous_field_range(const format::Container& container, std::uint32_t frame, std::uint32_t field) {
  const auto chunks = container.chunks_of(frame, field);
  HEADRACE_EXPECT(!chunks.empty(), UsageError, container.path() + ": no chunks");
  const std::uint64_t start = chunks.front().offset;
  std::uint64_t end = start;
  for (const auto& chunk : chunks) {
    HEADRACE_EXPECT(chunk.codec == format::CodecId::none && chunk.offset == end, UsageError,
                    container.path() + ": offset " + std::to_string(chunk.offset) +
                        ": expected uncompressed chunks of whole pages one after another (a Hilbert layout), "
                        "found a gap or a codec");
    end += chunk.raw_size;
  }
  return {start, end};
}

BlockCache::Loader contiguous_field_loader(std::shared_ptr<io::Backend> backend, const format::Container& container,
                                           std::uint32_t frame, std::uint32_t field, std::uint64_t unit_bytes) {
  const auto [start, end] = contiguous_field_range(container, frame, field);
  return [backend = std::move(backend), start, end, unit_bytes](std::uint64_t unit, std::span<std::byte> into) {
    const std::uint64_t offset = start + unit * unit_bytes;
    HEADRACE_EXPECT(offset < end, UsageError, "unit " + std::to_string(unit) + " is past the field's end");
    backend->submit({{offset, std::min(unit_bytes, end - offset), into.data()}})->check();
  };
}

double convert_blocks_to_hilbert(const std::string& input, const std::string& output, std::uint32_t bits,
                                 std::uint32_t chunk_pages,
                                 const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  const auto started = std::chrono::steady_clock::now();
  HEADRACE_EXPECT(chunk_pages >= 3 && chunk_pages % 3 == 0, UsageError,
                  "Hilbert chunks are a multiple of 3 pages (12 KiB holds 1024 whole points), got " +
                      std::to_string(chunk_pages));
  const auto source = format::Container::open(input);
  const BlockLayout blocks = block_layout_of(source);
  const std::uint32_t field = source.field_index("velocity");
  HilbertLayout layout{blocks.grid, bits};
  layout.check();

  format::WriterOptions options;
  options.chunk_size_bytes = std::uint64_t{chunk_pages} * page_bytes;
  format::ContainerWriter writer(output, {{"velocity", format::DType::float32, 3}}, options);
  for (const auto& [name, value] : source.attributes())
    if (name != "layout" && name != "block_dims") writer.set_attribute(name, value);
  writer.set_attribute("layout", std::string("hilbert"));
  writer.set_attribute("hilbert_bits", std::vector<std::int64_t>{bits});

  // order[h]: the partition-local point (x fastest) at Hilbert index h.
  const std::uint32_t p = layout.partition();
  const std::uint64_t cube = std::uint64_t{p} * p * p;
  std::vector<std::uint32_t> order(cube);
  for (std::uint64_t h = 0; h < cube; ++h) {
    std::uint32_t q[3];
    hilbert_point(h, bits, q);
    order[h] = q[0] + p * (q[1] + p * q[2]);
  }
  const std::uint64_t block_bytes = blocks.block_points() * point_bytes;
  std::shared_ptr<io::Backend> backend = io::open_backend(io::BackendKind::posix, input);
  std::vector<float> dense(3 * cube), serial(3 * cube);
  // The writer cuts each write into chunks: writes of whole chunks keep every chunk whole pages.
  const std::size_t chunk_floats = options.chunk_size_bytes / sizeof(float);
  std::vector<float> pending;
  const auto side = static_cast<std::int32_t>(p);
  const std::int32_t parts[3] = {static_cast<std::int32_t>(units_along(blocks.grid.dims[0], side)),
                                 static_cast<std::int32_t>(units_along(blocks.grid.dims[1], side)),
                                 static_cast<std::int32_t>(units_along(blocks.grid.dims[2], side))};
  const std::uint64_t total = source.frames().size() * static_cast<std::uint64_t>(parts[0]) * parts[1] * parts[2];
  std::uint64_t done = 0;
  for (std::uint32_t t = 0; t < source.frames().size(); ++t) {
    // Neighbouring partitions share source blocks: 256 MiB of them (at least 64) stay cached.
    BlockCache cache(block_bytes, std::max<std::uint64_t>(block_bytes * 64, 256ull << 20), 1,
                     container_block_loader(backend, source, t, field, blocks));
    const auto frame = writer.add_frame(source.frames()[t].time, source.frames()[t].bbox);
    for (std::int32_t pk = 0; pk < parts[2]; ++pk)
      for (std::int32_t pj = 0; pj < parts[1]; ++pj)
        for (std::int32_t pi = 0; pi < parts[0]; ++pi) {
          BlockCache::Handle held;
          for (std::uint32_t z = 0; z < p; ++z)
            for (std::uint32_t y = 0; y < p; ++y)
              for (std::uint32_t x = 0; x < p; ++x) {
                float* point = &dense[3 * (x + p * (y + std::uint64_t{p} * z))];
                const std::int32_t i = pi * side + static_cast<std::int32_t>(x), j = pj * side + static_cast<std::int32_t>(y),
                                   k = pk * side + static_cast<std::int32_t>(z);
                if (i >= blocks.grid.dims[0] || j >= blocks.grid.dims[1] || k >= blocks.grid.dims[2]) {
                  std::memset(point, 0, point_bytes);  // a partial partition's padding past the grid
                  continue;
                }
                std::uint64_t element = 0;
                const std::uint64_t unit = blocks.unit_of(i, j, k, element);
                if (!held.valid() || held.unit() != unit) {
                  held.release();
                  held = cache.acquire(unit);
                }
                std::memcpy(point, held.data() + element * point_bytes, point_bytes);
              }
          held.release();
          for (std::uint64_t h = 0; h < cube; ++h)
            std::memcpy(&serial[3 * h], &dense[3 * std::uint64_t{order[h]}], point_bytes);
          pending.insert(pending.end(), serial.begin(), serial.end());
          if (const std::size_t whole = pending.size() / chunk_floats * chunk_floats; whole > 0) {
            writer.write_field(frame, 0, std::as_bytes(std::span<const float>(pending.data(), whole)));
            pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(whole));
          }
          if (progress) progress(++done, total);
        }
    if (!pending.empty()) writer.write_field(frame, 0, std::as_bytes(std::span<const float>(pending)));
    pending.clear();
  }
  writer.close();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

std::vector<std::uint32_t> hilbert_order(std::uint32_t bits) {
  HEADRACE_EXPECT(bits >= 1 && bits <= 10, UsageError, "Hilbert partitions of 2^1 to 2^10 points a side in memory");
  const std::uint32_t p = 1u << bits;
  std::vector<std::uint32_t> order(std::size_t{p} * p * p);
  for (std::uint64_t h = 0; h < order.size(); ++h) {
    std::uint32_t q[3];
    hilbert_point(h, bits, q);
    order[h] = q[0] + p * (q[1] + p * q[2]);
  }
  return order;
}

}  // namespace headrace::workloads::streamlines
