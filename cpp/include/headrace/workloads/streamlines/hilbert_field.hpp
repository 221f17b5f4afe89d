// A velocity field in the Hilbert layout (seed 002, 3.1.2): the grid is cut into cubic partitions of
// P = 2^bits points a side (x fastest, as the paper's 3 x 3 x 3 partitions of 1024^3), and each
// partition's points are stored along the Hilbert curve. Uncompressed and in whole pages, the field is
// one contiguous run of the file, so the cache's unit (the "chunk" of the paper, a number of pages) is
// chosen when the file is read, not when it is written.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "headrace/format/container.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/workloads/streamlines/block_cache.hpp"
#include "headrace/workloads/streamlines/streamline_math.hpp"
#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "headrace/workloads/streamlines/unit_sampler.hpp"

namespace headrace::workloads::streamlines {

// From the attributes layout = "hilbert", hilbert_bits, grid_dims, grid_origin, grid_spacing.
[[nodiscard]] HilbertLayout hilbert_layout_of(const format::Container& container);

// Throws UsageError unless a unit of unit_bytes holds whole points.
void check_unit_bytes(std::uint64_t unit_bytes);

// A sampler over a unit source (unit_sampler.hpp) whose units are runs of unit_bytes (a whole number
// of points) of the field; throws UsageError for units that cut a point.
template <typename Units>
class HilbertField {
 public:
  HilbertField(HilbertLayout layout, Units& units) : layout_(layout), units_(&units) { check_unit_bytes(units.unit_bytes()); }
  bool operator()(const Vec3& p, Vec3& v) const {
    const HilbertUnits located{layout_, units_->unit_bytes() / point_bytes};
    return sample_units(layout_.grid, *units_, [&](std::int32_t i, std::int32_t j, std::int32_t k, std::uint64_t& element) {
      return located.unit_of(i, j, k, element);
    }, p, v);
  }

 private:
  HilbertLayout layout_;
  Units* units_;
};
using CachedHilbertField = HilbertField<BlockCache>;

// The file range [start, end) of (frame, field) when it is stored uncompressed and contiguous (chunks of
// whole pages one after another); throws UsageError naming the offset where it is not.
struct FieldRange {
  std::uint64_t start = 0, end = 0;
};
[[nodiscard]] FieldRange contiguous_field_range(const format::Container& container, std::uint32_t frame,
                                                std::uint32_t field);

// Loads unit u = bytes [u * unit_bytes, (u + 1) * unit_bytes) of (frame, field), which must be stored
// uncompressed and contiguous (chunks of whole pages, one after another); the last unit may be short
// (its tail is left as it was).
[[nodiscard]] BlockCache::Loader contiguous_field_loader(std::shared_ptr<io::Backend> backend,
                                                         const format::Container& container, std::uint32_t frame,
                                                         std::uint32_t field, std::uint64_t unit_bytes);

// The partition-local point (x fastest) at each Hilbert index of a partition of 2^bits points a side,
// bits in 1..10 (in memory): the order a partition's points are stored in.
[[nodiscard]] std::vector<std::uint32_t> hilbert_order(std::uint32_t bits);

// Rewrites frame after frame of a blocks-layout container in the Hilbert layout (partitions of
// 2^bits points, chunks of chunk_pages pages, a multiple of 3 so that chunks hold whole points),
// through `<output>.partial` and rename; returns the seconds it took (seed 002's table 1).
double convert_blocks_to_hilbert(const std::string& input, const std::string& output, std::uint32_t bits,
                                 std::uint32_t chunk_pages,
                                 const std::function<void(std::uint64_t done, std::uint64_t total)>& progress = {});

}  // namespace headrace::workloads::streamlines
