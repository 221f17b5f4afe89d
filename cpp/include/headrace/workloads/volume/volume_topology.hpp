// The fixed topology of a time-varying volume (seed 003): bricks of leaf cells of block-structured AMR, or
// one brick for a structured grid, and the region grid over them (volume_shared.hpp), built once. The
// container holds it in attributes (docs/format.md, section 5.9); frames hold the scalars in brick order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "headrace/format/container.hpp"
#include "headrace/workloads/volume/volume_shared.hpp"

namespace headrace::workloads::volume {

// A brick as the format stores it: its level, lower corner in that level's cell indices, size in cells.
struct AmrBrick {
  std::int32_t level = 0;
  std::array<std::int64_t, 3> lower{}, size{};
};

struct AmrLayout {
  std::array<std::int64_t, 3> domain_cells{};  // level 0
  std::vector<std::int64_t> refinement;         // between level l-1 and l, for l >= 1
  std::array<double, 3> origin{}, spacing{};    // the domain's lower corner, a level-0 cell's size
  std::vector<AmrBrick> bricks;                 // in the order their cells are stored
};

// Two bricks that share a cell (in brick order), or none. Bricks are compared in the finest level's cells.
[[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> overlapping_bricks(std::span<const AmrBrick> bricks,
                                                                                        std::span<const std::int64_t> refinement);

// Sort-last rendering of one frame by several renderers (headrace.sort_last): the region grid cut along z into
// slabs of whole region layers [first, last), one a renderer. Along z because a brick stores its cells x
// fastest and z slowest: a brick's cells within a run of z planes are one run of the frame, read as such.
struct RegionSlab {
  std::int32_t first = 0, last = 1 << 30;  // the default: every layer
};

// Elements [first, first + count) of a frame.
struct ElementRun {
  std::uint64_t first = 0, count = 0;
};

// The region grid holds at most this many regions unless asked otherwise.
inline constexpr std::uint64_t default_most_regions = std::uint64_t{1} << 21;

class VolumeTopology {
 public:
  // Throws UsageError naming `where` and the first brick that breaks a rule: a level out of range, an
  // empty size, outside the domain, or overlapping another brick.
  VolumeTopology(AmrLayout layout, const std::string& where, std::uint64_t most_regions = default_most_regions);

  // From a container's attributes: layout "amr", or a "linear" grid (one brick whose cells are centred on
  // the grid's points). Throws CorruptIndexError for malformed attributes, UsageError for data that is
  // not a volume (no grid, or a blocks/hilbert layout). Checks that every frame of `field` holds
  // cell_count() float32 scalars.
  [[nodiscard]] static VolumeTopology of_container(const format::Container& container, std::uint32_t field,
                                                   std::uint64_t most_regions = default_most_regions);

  [[nodiscard]] const AmrLayout& layout() const noexcept { return layout_; }
  [[nodiscard]] std::span<const BrickRecord> bricks() const noexcept { return records_; }
  [[nodiscard]] std::uint64_t cell_count() const noexcept { return cell_count_; }
  [[nodiscard]] std::uint64_t region_count() const noexcept { return region_step_.size(); }
  [[nodiscard]] std::span<const std::uint32_t> region_first() const noexcept { return region_first_; }
  [[nodiscard]] std::span<const std::uint32_t> region_bricks() const noexcept { return region_bricks_; }
  [[nodiscard]] std::span<const float> region_step() const noexcept { return region_step_; }
  [[nodiscard]] std::span<const float> region_margin() const noexcept { return region_margin_; }
  [[nodiscard]] Vec3 domain_lower() const noexcept { return domain_lower_; }
  [[nodiscard]] Vec3 domain_upper() const noexcept { return domain_upper_; }

  // `count` slabs of whole region layers along z, in order, with about equal cells each (empty ones when the
  // grid has fewer layers than that).
  [[nodiscard]] std::vector<RegionSlab> cut_slabs(std::uint32_t count) const;
  // The runs of a frame a slab's renderer needs: each brick that reaches the slab or its ghost (the layer
  // either side), its z planes whose cells' tents reach them. Ascending, one a brick.
  [[nodiscard]] std::vector<ElementRun> slab_cells(RegionSlab slab) const;
  // The topology a slab's renderer draws with, over the runs it holds (`held`: ascending, packed one after
  // another in its frame buffer, covering slab_cells(slab)): those bricks clipped to those planes at their
  // place in the buffer, region lists for the slab and its ghost only. The region grid stays the whole
  // grid's, so rays step as one renderer's. UsageError when `held` misses a needed cell.
  [[nodiscard]] VolumeTopology slab(RegionSlab slab, std::span<const ElementRun> held) const;
  [[nodiscard]] RegionSlab slab_drawn() const noexcept { return slab_; }

  // A view over this topology's host arrays (the CPU renderer); frame-dependent pointers left null.
  [[nodiscard]] VolumeView host_view() const;
  // Builds the region grid from the bricks anew: the constructor's work, and what the baseline pays
  // each frame (no refit).
  void rebuild_regions();

 private:

  // A brick of a slab: its z planes [lo, hi] that the slab and its ghost need.
  struct SlabBrick {
    std::uint32_t brick = 0;
    std::int32_t lo = 0, hi = 0;
  };
  [[nodiscard]] std::vector<SlabBrick> slab_bricks(RegionSlab slab) const;

  AmrLayout layout_;
  std::uint64_t most_regions_;
  std::vector<BrickRecord> records_;
  std::uint64_t cell_count_ = 0;
  Vec3 domain_lower_, domain_upper_, region_lower_, region_size_;
  std::array<std::int32_t, 3> regions_{1, 1, 1};
  std::vector<std::uint32_t> region_first_, region_bricks_;
  std::vector<float> region_step_, region_margin_;
  RegionSlab slab_;
};

}  // namespace headrace::workloads::volume
