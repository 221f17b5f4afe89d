// A velocity field stored in native blocks (seed 002, 3.1.1; `headrace generate flow`, layout
// "blocks"): the grid is cut into blocks of bx x by x bz points, block (bi, bj, bk) is unit
// bi + NBX (bj + NBY bk), and inside a block points run x fastest. CachedBlockField samples it through
// the user-managed BlockCache (units = blocks); container_block_loader reads a block of a container.
#pragma once

#include <memory>
#include <vector>

#include "headrace/format/container.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/workloads/streamlines/block_cache.hpp"
#include "headrace/workloads/streamlines/streamline_math.hpp"
#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "headrace/workloads/streamlines/unit_sampler.hpp"

namespace headrace::workloads::streamlines {

// A container's attribute of integers; throws UsageError naming the attribute when it is missing or
// holds something else.
[[nodiscard]] std::vector<std::int64_t> integers_of(const format::Container& container, const std::string& name);

// Throws UsageError unless the container's attribute layout is `name`.
void expect_layout(const format::Container& container, const std::string& name);

// The grid of a container's attributes grid_dims, grid_origin and grid_spacing; throws UsageError
// naming what is missing.
[[nodiscard]] GridGeometry grid_geometry_of(const format::Container& container);

// Reads the layout of a container written in blocks: its grid, block_dims and layout "blocks"; throws
// UsageError naming what is missing.
[[nodiscard]] BlockLayout block_layout_of(const format::Container& container);

// A sampler over native blocks handed out by a unit source (unit_sampler.hpp).
template <typename Units>
class BlockField {
 public:
  BlockField(BlockLayout layout, Units& units) : layout_(layout), units_(&units) {}
  bool operator()(const Vec3& p, Vec3& v) const {
    return sample_units(layout_.grid, *units_, [this](std::int32_t i, std::int32_t j, std::int32_t k, std::uint64_t& element) {
      return layout_.unit_of(i, j, k, element);
    }, p, v);
  }

 private:
  BlockLayout layout_;
  Units* units_;
};
using CachedBlockField = BlockField<BlockCache>;

// File offset of every block of (frame, field) of an uncompressed blocks-layout container; throws
// UsageError for compressed chunks or chunks that cut a block.
[[nodiscard]] std::vector<std::uint64_t> block_offsets(const format::Container& container, std::uint32_t frame,
                                                       std::uint32_t field, const BlockLayout& layout);

// Loads block `unit` of (frame, field) of an uncompressed blocks-layout container through backend
// (standard or direct I/O, any kind); a failed or short read throws naming the file and offset.
[[nodiscard]] BlockCache::Loader container_block_loader(std::shared_ptr<io::Backend> backend,
                                                        const format::Container& container, std::uint32_t frame,
                                                        std::uint32_t field, const BlockLayout& layout);

}  // namespace headrace::workloads::streamlines
