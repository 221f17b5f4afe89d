#include "headrace/workloads/volume/volume_topology.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "headrace/error.hpp"

namespace headrace::workloads::volume {
namespace {

constexpr int most_levels = 32;

std::string brick_text(std::uint64_t index, const AmrBrick& b) {
  return "brick " + std::to_string(index) + " (level " + std::to_string(b.level) + ", lower " + std::to_string(b.lower[0]) +
         " " + std::to_string(b.lower[1]) + " " + std::to_string(b.lower[2]) + ", size " + std::to_string(b.size[0]) + " " +
         std::to_string(b.size[1]) + " " + std::to_string(b.size[2]) + ")";
}

// Cells of level `level` along one level-0 cell.
std::vector<std::int64_t> level_scales(std::span<const std::int64_t> refinement) {
  std::vector<std::int64_t> scales{1};
  for (std::int64_t r : refinement) scales.push_back(scales.back() * r);
  return scales;
}

struct IntBox {
  std::array<std::int64_t, 3> lo, hi;  // hi exclusive
};

bool overlap(const IntBox& a, const IntBox& b) {
  for (int axis = 0; axis < 3; ++axis)
    if (a.hi[axis] <= b.lo[axis] || b.hi[axis] <= a.lo[axis]) return false;
  return true;
}

}  // namespace

std::optional<std::pair<std::uint64_t, std::uint64_t>> overlapping_bricks(std::span<const AmrBrick> bricks,
                                                                          std::span<const std::int64_t> refinement) {
  if (bricks.size() < 2) return std::nullopt;
  HEADRACE_EXPECT(refinement.size() < most_levels, UsageError, "at most 31 refinement ratios");
  const auto scales = level_scales(refinement);
  const std::int64_t finest = scales.back();
  std::vector<IntBox> boxes(bricks.size());
  std::int64_t edge = std::numeric_limits<std::int64_t>::max();
  std::array<std::int64_t, 3> upper{0, 0, 0};
  for (std::size_t i = 0; i < bricks.size(); ++i) {
    const AmrBrick& b = bricks[i];
    HEADRACE_EXPECT(b.level >= 0 && static_cast<std::size_t>(b.level) < scales.size(), UsageError,
                    brick_text(i, b) + ": level outside 0.." + std::to_string(scales.size() - 1));
    const std::int64_t s = finest / scales[static_cast<std::size_t>(b.level)];
    for (int axis = 0; axis < 3; ++axis) {
      HEADRACE_EXPECT(b.lower[axis] >= 0 && b.size[axis] >= 1, UsageError, brick_text(i, b) + ": negative corner or empty size");
      boxes[i].lo[axis] = b.lower[axis] * s;
      boxes[i].hi[axis] = (b.lower[axis] + b.size[axis]) * s;
      upper[axis] = std::max(upper[axis], boxes[i].hi[axis]);
      edge = std::min(edge, b.size[axis] * s);
    }
  }
  // Hash every brick into the cells of a coarse integer grid it touches; two bricks that share a cell of
  // the domain share a grid cell, where they are compared. The grid's cell: the smallest brick edge,
  // grown until the grid has at most ~4 cells per brick.
  const auto cells_for = [&](std::int64_t e) {
    double n = 1;
    for (int axis = 0; axis < 3; ++axis) n *= static_cast<double>((upper[axis] + e - 1) / e);
    return n;
  };
  while (cells_for(edge) > 4.0 * static_cast<double>(bricks.size()) + 64) edge *= 2;
  std::array<std::int64_t, 3> n{};
  for (int axis = 0; axis < 3; ++axis) n[axis] = (upper[axis] + edge - 1) / edge;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> cells;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const IntBox& b = boxes[i];
    for (std::int64_t z = b.lo[2] / edge; z <= (b.hi[2] - 1) / edge; ++z)
      for (std::int64_t y = b.lo[1] / edge; y <= (b.hi[1] - 1) / edge; ++y)
        for (std::int64_t x = b.lo[0] / edge; x <= (b.hi[0] - 1) / edge; ++x) {
          auto& list = cells[x + n[0] * (y + n[1] * z)];
          for (std::uint32_t other : list)
            if (overlap(boxes[other], b)) return std::pair<std::uint64_t, std::uint64_t>{other, i};
          list.push_back(static_cast<std::uint32_t>(i));
        }
  }
  return std::nullopt;
}

VolumeTopology::VolumeTopology(AmrLayout layout, const std::string& where, std::uint64_t most_regions)
    : layout_(std::move(layout)), most_regions_(std::max<std::uint64_t>(most_regions, 1)) {
  const AmrLayout& l = layout_;
  HEADRACE_EXPECT(l.refinement.size() < most_levels, UsageError, where + ": at most 31 refinement ratios");
  for (std::int64_t r : l.refinement)
    HEADRACE_EXPECT(r >= 2 && r <= 64, UsageError, where + ": refinement ratios must be in 2..64, got " + std::to_string(r));
  for (int axis = 0; axis < 3; ++axis) {
    HEADRACE_EXPECT(l.domain_cells[axis] >= 1, UsageError, where + ": the domain needs at least one cell along each axis");
    HEADRACE_EXPECT(std::isfinite(l.spacing[axis]) && l.spacing[axis] > 0 && std::isfinite(l.origin[axis]), UsageError,
                    where + ": grid_spacing must be positive and finite, grid_origin finite");
  }
  HEADRACE_EXPECT(!l.bricks.empty(), UsageError, where + ": the volume has no bricks");
  HEADRACE_EXPECT(l.bricks.size() < (std::uint64_t{1} << 32), UsageError, where + ": more than 2^32 - 1 bricks");
  const auto scales = level_scales(l.refinement);
  records_.reserve(l.bricks.size());
  for (std::size_t i = 0; i < l.bricks.size(); ++i) {
    const AmrBrick& b = l.bricks[i];
    HEADRACE_EXPECT(b.level >= 0 && static_cast<std::size_t>(b.level) < scales.size(), UsageError,
                    where + ": " + brick_text(i, b) + ": level outside 0.." + std::to_string(scales.size() - 1));
    const auto s = scales[static_cast<std::size_t>(b.level)];
    BrickRecord r;
    r.level = b.level;
    r.first_cell = cell_count_;
    std::uint64_t cells = 1;
    for (int axis = 0; axis < 3; ++axis) {
      HEADRACE_EXPECT(b.size[axis] >= 1 && b.lower[axis] >= 0 && b.lower[axis] + b.size[axis] <= l.domain_cells[axis] * s, UsageError,
                      where + ": " + brick_text(i, b) + " lies outside the domain of " + std::to_string(l.domain_cells[0]) + " " +
                          std::to_string(l.domain_cells[1]) + " " + std::to_string(l.domain_cells[2]) + " level-0 cells");
      r.size[axis] = static_cast<std::int32_t>(b.size[axis]);
      cells *= static_cast<std::uint64_t>(b.size[axis]);
    }
    const double h[3] = {l.spacing[0] / static_cast<double>(s), l.spacing[1] / static_cast<double>(s), l.spacing[2] / static_cast<double>(s)};
    r.cell = {static_cast<float>(h[0]), static_cast<float>(h[1]), static_cast<float>(h[2])};
    r.lower = {static_cast<float>(l.origin[0] + static_cast<double>(b.lower[0]) * h[0]),
               static_cast<float>(l.origin[1] + static_cast<double>(b.lower[1]) * h[1]),
               static_cast<float>(l.origin[2] + static_cast<double>(b.lower[2]) * h[2])};
    records_.push_back(r);
    cell_count_ += cells;
  }
  if (auto pair = overlapping_bricks(l.bricks, l.refinement))
    throw UsageError(where + ": " + brick_text(pair->first, l.bricks[pair->first]) + " and " +
                     brick_text(pair->second, l.bricks[pair->second]) + " overlap; bricks hold leaf cells only");
  domain_lower_ = {static_cast<float>(l.origin[0]), static_cast<float>(l.origin[1]), static_cast<float>(l.origin[2])};
  domain_upper_ = {static_cast<float>(l.origin[0] + static_cast<double>(l.domain_cells[0]) * l.spacing[0]),
                   static_cast<float>(l.origin[1] + static_cast<double>(l.domain_cells[1]) * l.spacing[1]),
                   static_cast<float>(l.origin[2] + static_cast<double>(l.domain_cells[2]) * l.spacing[2])};
  rebuild_regions();
}

void VolumeTopology::rebuild_regions() {
  HEADRACE_EXPECT(slab_.first == 0 && slab_.last == RegionSlab{}.last, UsageError,
                  "a slab's topology keeps the whole grid's regions: rebuild the whole topology's");
  // Regions as small as the typical brick (the median of the bricks' shortest edges), at most 8 typical
  // cells a side (a large brick, a structured grid, is split so that empty space can be skipped),
  // doubled until there are at most most_regions_: most regions then list one brick, or a few at brick
  // boundaries.
  std::vector<float> edges(records_.size()), cells(records_.size());
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const BrickRecord& b = records_[i];
    edges[i] = min3(static_cast<float>(b.size[0]) * b.cell.x, static_cast<float>(b.size[1]) * b.cell.y,
                    static_cast<float>(b.size[2]) * b.cell.z);
    cells[i] = min3(b.cell.x, b.cell.y, b.cell.z);
  }
  const auto median = [](std::vector<float>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const Vec3 extent = domain_upper_ - domain_lower_;
  float edge = std::max(std::min(median(edges), 8.0f * median(cells)), max3(extent.x, extent.y, extent.z) / 4096.0f);
  const auto count_for = [&](float e, std::array<std::int32_t, 3>& n) {
    double total = 1;
    for (int axis = 0; axis < 3; ++axis) {
      n[axis] = std::max(1, static_cast<std::int32_t>(std::ceil(component(extent, axis) / e)));
      total *= n[axis];
    }
    return total;
  };
  while (count_for(edge, regions_) > static_cast<double>(most_regions_)) edge *= 2.0f;
  region_lower_ = domain_lower_;
  region_size_ = {edge, edge, edge};
  for (int axis = 0; axis < 3; ++axis)  // regions cover the domain exactly along each axis
    (axis == 0 ? region_size_.x : axis == 1 ? region_size_.y : region_size_.z) = component(extent, axis) / static_cast<float>(regions_[axis]);

  const std::uint64_t count = static_cast<std::uint64_t>(regions_[0]) * regions_[1] * regions_[2];
  // The regions a brick's tents reach (its box grown by half a cell), as index ranges.
  const auto reach = [&](const BrickRecord& b, std::int32_t lo[3], std::int32_t hi[3]) {
    for (int axis = 0; axis < 3; ++axis) {
      const float h = component(b.cell, axis), low = component(b.lower, axis) - 0.5f * h;
      const float high = component(b.lower, axis) + (static_cast<float>(b.size[axis]) + 0.5f) * h;
      const float o = component(region_lower_, axis), s = component(region_size_, axis);
      lo[axis] = clamp_cell((low - o) / s, regions_[axis]);
      hi[axis] = clamp_cell((high - o) / s, regions_[axis]);
    }
  };
  std::vector<std::uint32_t> counts(count + 1, 0);
  for (const BrickRecord& b : records_) {
    std::int32_t lo[3], hi[3];
    reach(b, lo, hi);
    for (std::int32_t z = lo[2]; z <= hi[2]; ++z)
      for (std::int32_t y = lo[1]; y <= hi[1]; ++y)
        for (std::int32_t x = lo[0]; x <= hi[0]; ++x) {
          std::uint32_t& c = counts[static_cast<std::size_t>(x + static_cast<std::int64_t>(regions_[0]) * (y + static_cast<std::int64_t>(regions_[1]) * z))];
          HEADRACE_EXPECT(c < std::numeric_limits<std::uint32_t>::max(), UsageError, "too many bricks reach one region");
          ++c;
        }
  }
  region_first_.assign(count + 1, 0);
  std::uint64_t total = 0;
  for (std::uint64_t r = 0; r < count; ++r) {
    region_first_[r] = static_cast<std::uint32_t>(total);
    total += counts[r];
    HEADRACE_EXPECT(total < std::numeric_limits<std::uint32_t>::max(), UsageError,
                    "the region lists hold more than 2^32 entries: ask for fewer regions");
  }
  region_first_[count] = static_cast<std::uint32_t>(total);
  region_bricks_.assign(total, 0);
  region_step_.assign(count, 3.0e38f);
  region_margin_.assign(count, 0.0f);
  std::vector<std::uint32_t> fill(region_first_.begin(), region_first_.end() - 1);
  // Two passes: the bricks whose boxes overlap a region first (the owners reconstruct() tries first),
  // then those whose tents only reach into it.
  for (const bool owners : {true, false})
    for (std::uint32_t i = 0; i < records_.size(); ++i) {
      const BrickRecord& b = records_[i];
      const float step = min3(b.cell.x, b.cell.y, b.cell.z), half_cell = 0.5f * max3(b.cell.x, b.cell.y, b.cell.z);
      std::int32_t lo[3], hi[3];
      reach(b, lo, hi);
      for (std::int32_t z = lo[2]; z <= hi[2]; ++z)
        for (std::int32_t y = lo[1]; y <= hi[1]; ++y)
          for (std::int32_t x = lo[0]; x <= hi[0]; ++x) {
            const Vec3 rlo = {region_lower_.x + static_cast<float>(x) * region_size_.x, region_lower_.y + static_cast<float>(y) * region_size_.y,
                              region_lower_.z + static_cast<float>(z) * region_size_.z};
            const Vec3 rhi = rlo + region_size_;
            const bool owner = b.lower.x < rhi.x && b.lower.y < rhi.y && b.lower.z < rhi.z &&
                               b.lower.x + static_cast<float>(b.size[0]) * b.cell.x > rlo.x &&
                               b.lower.y + static_cast<float>(b.size[1]) * b.cell.y > rlo.y &&
                               b.lower.z + static_cast<float>(b.size[2]) * b.cell.z > rlo.z;
            if (owner != owners) continue;
            const auto r = static_cast<std::size_t>(x + static_cast<std::int64_t>(regions_[0]) * (y + static_cast<std::int64_t>(regions_[1]) * z));
            region_bricks_[fill[r]++] = i;
            region_step_[r] = std::min(region_step_[r], step);
            region_margin_[r] = std::max(region_margin_[r], half_cell);
          }
    }
  for (float& s : region_step_)
    if (s > 1.0e38f) s = min3(region_size_.x, region_size_.y, region_size_.z);  // an empty region: never sampled
}

std::vector<RegionSlab> VolumeTopology::cut_slabs(std::uint32_t count) const {
  HEADRACE_EXPECT(count >= 1, UsageError, "at least one slab");
  const std::int32_t layers = regions_[2];
  // A layer's weight: the cells whose centres lie in it.
  std::vector<double> cells(static_cast<std::size_t>(layers), 0.0);
  for (const BrickRecord& b : records_)
    for (std::int32_t z = 0; z < b.size[2]; ++z) {
      const float centre = b.lower.z + (static_cast<float>(z) + 0.5f) * b.cell.z;
      cells[static_cast<std::size_t>(clamp_cell((centre - region_lower_.z) / region_size_.z, layers))] +=
          static_cast<double>(b.size[0]) * b.size[1];
    }
  const double total = std::accumulate(cells.begin(), cells.end(), 0.0);
  // A layer goes to the slab whose share of the running count its middle falls in.
  std::vector<RegionSlab> slabs(count, RegionSlab{0, 0});
  double before = 0;
  std::uint32_t slab = 0;
  for (std::int32_t layer = 0; layer < layers; ++layer) {
    const double middle = total > 0 ? (before + cells[static_cast<std::size_t>(layer)] / 2) / total : (layer + 0.5) / layers;
    before += cells[static_cast<std::size_t>(layer)];
    slab = std::max(slab, std::min(count - 1, static_cast<std::uint32_t>(middle * count)));
    if (slabs[slab].first == slabs[slab].last) slabs[slab] = {layer, layer};
    slabs[slab].last = layer + 1;
  }
  // Empty slabs sit where they fall, between their neighbours.
  for (std::uint32_t k = 1; k < count; ++k)
    if (slabs[k].first == slabs[k].last) slabs[k] = {slabs[k - 1].last, slabs[k - 1].last};
  return slabs;
}

std::vector<VolumeTopology::SlabBrick> VolumeTopology::slab_bricks(RegionSlab slab) const {
  HEADRACE_EXPECT(slab.first >= 0 && slab.first <= slab.last && slab.last <= regions_[2], UsageError,
                  "slab layers " + std::to_string(slab.first) + ".." + std::to_string(slab.last) + " outside the grid's " +
                      std::to_string(regions_[2]) + " layers along z");
  std::vector<SlabBrick> bricks;
  if (slab.first == slab.last) return bricks;
  // The slab and its ghost: the bricks their region lists name, clipped to the planes whose tents reach them.
  const std::int32_t g0 = std::max(slab.first - 1, 0), g1 = std::min(slab.last + 1, regions_[2]);
  const std::uint64_t plane = static_cast<std::uint64_t>(regions_[0]) * regions_[1];
  std::vector<std::uint8_t> listed(records_.size(), 0);
  for (std::uint64_t k = region_first_[plane * static_cast<std::uint64_t>(g0)]; k < region_first_[plane * static_cast<std::uint64_t>(g1)]; ++k)
    listed[region_bricks_[k]] = 1;
  const float lower = region_lower_.z + static_cast<float>(g0) * region_size_.z, upper = region_lower_.z + static_cast<float>(g1) * region_size_.z;
  for (std::uint32_t i = 0; i < records_.size(); ++i) {
    if (!listed[i]) continue;
    std::int32_t lo[3], hi[3];
    const BrickRecord& b = records_[i];
    tent_cells(b, {b.lower.x, b.lower.y, lower}, {b.lower.x, b.lower.y, upper}, lo, hi);
    if (lo[2] <= hi[2]) bricks.push_back({i, lo[2], hi[2]});
  }
  return bricks;
}

std::vector<ElementRun> VolumeTopology::slab_cells(RegionSlab slab) const {
  std::vector<ElementRun> runs;
  for (const SlabBrick& s : slab_bricks(slab)) {
    const BrickRecord& b = records_[s.brick];
    const std::uint64_t per_plane = static_cast<std::uint64_t>(b.size[0]) * b.size[1];
    runs.push_back({b.first_cell + per_plane * static_cast<std::uint64_t>(s.lo), per_plane * static_cast<std::uint64_t>(s.hi - s.lo + 1)});
  }
  return runs;
}

VolumeTopology VolumeTopology::slab(RegionSlab slab, std::span<const ElementRun> held) const {
  std::vector<std::uint64_t> packed_at(held.size() + 1, 0);  // where each held run starts in the buffer
  for (std::size_t k = 0; k < held.size(); ++k) {
    HEADRACE_EXPECT(k == 0 || held[k].first >= held[k - 1].first + held[k - 1].count, UsageError,
                    "held runs must be ascending and disjoint");
    packed_at[k + 1] = packed_at[k] + held[k].count;
  }
  // Where a run of the frame lies in the buffer: it must lie in held runs that follow each other in the
  // frame, and so in the buffer.
  const auto place = [&](ElementRun run) {
    const auto after = std::upper_bound(held.begin(), held.end(), run.first, [](std::uint64_t e, const ElementRun& h) { return e < h.first; });
    std::size_t k = static_cast<std::size_t>(after - held.begin());
    bool covered = k > 0;
    const std::uint64_t at = covered ? packed_at[k - 1] + (run.first - held[k - 1].first) : 0;
    for (std::uint64_t reach = covered ? held[k - 1].first + held[k - 1].count : 0; covered && reach < run.first + run.count; ++k) {
      covered = k < held.size() && held[k].first == reach;
      if (covered) reach += held[k].count;
    }
    HEADRACE_EXPECT(covered, UsageError,
                    "the held runs miss frame elements of " + std::to_string(run.first) + ".." + std::to_string(run.first + run.count));
    return at;
  };
  VolumeTopology out = *this;
  out.slab_ = slab;
  for (BrickRecord& b : out.records_) b.size[0] = b.size[1] = b.size[2] = 0, b.first_cell = 0;  // not the slab's: never read
  const auto scales = level_scales(layout_.refinement);
  for (const SlabBrick& s : slab_bricks(slab)) {
    const BrickRecord& whole = records_[s.brick];
    BrickRecord& b = out.records_[s.brick];
    b = whole;
    // The clipped brick's corner as the constructor places a brick that starts at plane lo.
    const AmrBrick& a = layout_.bricks[s.brick];
    b.lower.z = static_cast<float>(layout_.origin[2] + static_cast<double>(a.lower[2] + s.lo) * layout_.spacing[2] /
                                                           static_cast<double>(scales[static_cast<std::size_t>(a.level)]));
    b.size[2] = s.hi - s.lo + 1;
    const std::uint64_t per_plane = static_cast<std::uint64_t>(b.size[0]) * b.size[1];
    b.first_cell = place({whole.first_cell + per_plane * static_cast<std::uint64_t>(s.lo), per_plane * static_cast<std::uint64_t>(b.size[2])});
  }
  // Region lists for the slab and its ghost only; the others empty (they classify as empty).
  const std::uint64_t plane = static_cast<std::uint64_t>(regions_[0]) * regions_[1];
  const bool some = slab.first < slab.last;
  const std::uint64_t r0 = some ? plane * static_cast<std::uint64_t>(std::max(slab.first - 1, 0)) : 0;
  const std::uint64_t r1 = some ? plane * static_cast<std::uint64_t>(std::min(slab.last + 1, regions_[2])) : 0;
  const std::uint32_t base = region_first_[r0], top = region_first_[r1];
  for (std::uint64_t r = 0; r < region_first_.size(); ++r)
    out.region_first_[r] = r <= r0 ? 0 : (r >= r1 ? top - base : region_first_[r] - base);
  out.region_bricks_.assign(region_bricks_.begin() + base, region_bricks_.begin() + top);
  out.cell_count_ = packed_at.back();
  return out;
}

VolumeView VolumeTopology::host_view() const {
  VolumeView v;
  v.bricks = records_.data();
  v.domain_lower = domain_lower_, v.domain_upper = domain_upper_;
  v.region_lower = region_lower_, v.region_size = region_size_;
  for (int axis = 0; axis < 3; ++axis) v.regions[axis] = regions_[axis];
  v.region_first = region_first_.data();
  v.region_bricks = region_bricks_.data();
  v.region_step = region_step_.data();
  v.region_margin = region_margin_.data();
  v.slab_first = slab_.first, v.slab_last = slab_.last;
  return v;
}

namespace {

const format::AttributeValue* find(const format::Container& c, const std::string& name) {
  const auto it = c.attributes().find(name);
  return it == c.attributes().end() ? nullptr : &it->second;
}

std::vector<std::int64_t> integers(const format::Container& c, const std::string& name, std::size_t count) {
  const auto* value = find(c, name);
  const auto* ints = value ? std::get_if<std::vector<std::int64_t>>(value) : nullptr;
  HEADRACE_EXPECT(ints && (count == 0 || ints->size() == count), CorruptIndexError,
                  c.path() + ": attribute '" + name + "' must hold " + (count ? std::to_string(count) + " integers" : "integers"));
  return *ints;
}

std::array<double, 3> reals(const format::Container& c, const std::string& name, std::array<double, 3> fallback) {
  const auto* value = find(c, name);
  if (!value) return fallback;
  std::array<double, 3> out{};
  if (const auto* d = std::get_if<std::vector<double>>(value); d && d->size() == 3) {
    std::copy(d->begin(), d->end(), out.begin());
  } else if (const auto* i = std::get_if<std::vector<std::int64_t>>(value); i && i->size() == 3) {
    for (int axis = 0; axis < 3; ++axis) out[axis] = static_cast<double>((*i)[axis]);
  } else {
    throw CorruptIndexError(c.path() + ": attribute '" + name + "' must hold three numbers");
  }
  return out;
}

}  // namespace

VolumeTopology VolumeTopology::of_container(const format::Container& container, std::uint32_t field, std::uint64_t most_regions) {
  const std::string& path = container.path();
  const auto* layout_value = find(container, "layout");
  const std::string* layout_name = layout_value ? std::get_if<std::string>(layout_value) : nullptr;
  const std::string layout = layout_name ? *layout_name : (find(container, "grid_dims") ? "linear" : "");
  AmrLayout l;
  if (layout == "amr") {
    const auto domain = integers(container, "amr_domain_cells", 3);
    std::copy(domain.begin(), domain.end(), l.domain_cells.begin());
    if (find(container, "amr_refinement")) l.refinement = integers(container, "amr_refinement", 0);
    l.origin = reals(container, "grid_origin", {0, 0, 0});
    l.spacing = reals(container, "grid_spacing", {1, 1, 1});
    const auto flat = integers(container, "amr_bricks", 0);
    HEADRACE_EXPECT(flat.size() % 7 == 0 && !flat.empty(), CorruptIndexError,
                    path + ": attribute 'amr_bricks' holds " + std::to_string(flat.size()) + " integers, not seven per brick");
    for (std::size_t i = 0; i < flat.size(); i += 7) {
      HEADRACE_EXPECT(flat[i] >= 0 && flat[i] < most_levels, CorruptIndexError,
                      path + ": brick " + std::to_string(i / 7) + " has level " + std::to_string(flat[i]));
      l.bricks.push_back({static_cast<std::int32_t>(flat[i]), {flat[i + 1], flat[i + 2], flat[i + 3]}, {flat[i + 4], flat[i + 5], flat[i + 6]}});
    }
  } else if (layout == "linear" && find(container, "grid_dims")) {
    const auto dims = integers(container, "grid_dims", 3);
    const auto origin = reals(container, "grid_origin", {0, 0, 0});
    l.spacing = reals(container, "grid_spacing", {1, 1, 1});
    for (int axis = 0; axis < 3; ++axis) {
      l.domain_cells[axis] = dims[axis];
      l.origin[axis] = origin[axis] - 0.5 * l.spacing[axis];  // cells centred on the points
    }
    l.bricks.push_back({0, {0, 0, 0}, {dims[0], dims[1], dims[2]}});
  } else if (layout == "blocks" || layout == "hilbert") {
    throw UsageError(path + ": a grid stored in layout '" + layout +
                     "' cannot be drawn as a volume; convert it to layout linear first");
  } else {
    throw UsageError(path + ": not a volume: it has no grid (grid_dims with layout linear) and no AMR topology (layout amr)");
  }
  VolumeTopology topology(std::move(l), path, most_regions);
  const format::FieldInfo& info = container.fields().at(field);
  HEADRACE_EXPECT(info.dtype == format::DType::float32 && info.components == 1, UsageError,
                  path + ": field '" + info.name + "' must hold float32 scalars (one component) to be drawn as a volume");
  for (std::uint32_t frame = 0; frame < container.frames().size(); ++frame) {
    const std::uint64_t elements = container.frame_field(frame, field).element_count;
    HEADRACE_EXPECT(elements == topology.cell_count(), CorruptIndexError,
                    path + ": frame " + std::to_string(frame) + " of field '" + info.name + "' holds " + std::to_string(elements) +
                        " values where its topology has " + std::to_string(topology.cell_count()) +
                        " cells: every frame must share the topology");
  }
  return topology;
}

}  // namespace headrace::workloads::volume
