#include "headrace/workloads/streamlines/blocked_field.hpp"

#include <string>
#include <variant>
#include <vector>

#include "headrace/error.hpp"

namespace headrace::workloads::streamlines {
namespace {

template <typename T>
std::vector<T> numbers(const format::Container& container, const std::string& name) {
  const auto found = container.attributes().find(name);
  HEADRACE_EXPECT(found != container.attributes().end(), UsageError,
                  container.path() + ": no attribute '" + name + "': not a flow field's grid");
  if (const auto* values = std::get_if<std::vector<T>>(&found->second)) return *values;
  if constexpr (std::is_same_v<T, double>) {
    if (const auto* ints = std::get_if<std::vector<std::int64_t>>(&found->second)) return {ints->begin(), ints->end()};
  }
  throw UsageError(container.path() + ": attribute '" + name + "' is not a list of numbers");
}

}  // namespace

std::vector<std::int64_t> integers_of(const format::Container& container, const std::string& name) {
  return numbers<std::int64_t>(container, name);
}

void expect_layout(const format::Container& container, const std::string& name) {
  const auto layout = container.attributes().find("layout");
  HEADRACE_EXPECT(layout != container.attributes().end() && std::holds_alternative<std::string>(layout->second) &&
                      std::get<std::string>(layout->second) == name,
                  UsageError, container.path() + ": expected attribute layout = \"" + name + "\"");
}

void BlockLayout::check() const {
  for (int axis = 0; axis < 3; ++axis)
    HEADRACE_EXPECT(block[axis] >= 1 && grid.dims[axis] >= 2 && block[axis] <= grid.dims[axis], UsageError,
                    "grid dims " + std::to_string(grid.dims[0]) + "x" + std::to_string(grid.dims[1]) + "x" +
                        std::to_string(grid.dims[2]) + " (2 or more a side) in blocks of " + std::to_string(block[0]) +
                        "x" + std::to_string(block[1]) + "x" + std::to_string(block[2]) +
                        " (1 or more, no larger than the grid: a larger one would be mostly padding)");
}

GridGeometry grid_geometry_of(const format::Container& container) {
  const auto dims = integers_of(container, "grid_dims");
  const auto origin = numbers<double>(container, "grid_origin");
  const auto spacing = numbers<double>(container, "grid_spacing");
  HEADRACE_EXPECT(dims.size() == 3 && origin.size() == 3 && spacing.size() == 3, UsageError,
                  container.path() + ": grid_dims, grid_origin and grid_spacing need 3 values each");
  GridGeometry grid;
  for (int axis = 0; axis < 3; ++axis) {
    grid.dims[axis] = static_cast<std::int32_t>(dims[axis]);
    grid.origin[axis] = static_cast<float>(origin[axis]);
    grid.spacing[axis] = static_cast<float>(spacing[axis]);
  }
  return grid;
}

BlockLayout block_layout_of(const format::Container& container) {
  expect_layout(container, "blocks");
  const auto block = integers_of(container, "block_dims");
  HEADRACE_EXPECT(block.size() == 3, UsageError, container.path() + ": block_dims needs 3 values");
  BlockLayout result;
  result.grid = grid_geometry_of(container);
  for (int axis = 0; axis < 3; ++axis) result.block[axis] = static_cast<std::int32_t>(block[axis]);
  result.check();
  return result;
}

std::vector<std::uint64_t> block_offsets(const format::Container& container, std::uint32_t frame, std::uint32_t field,
                                         const BlockLayout& layout) {
  const std::uint64_t element_bytes = container.fields().at(field).element_bytes();
  HEADRACE_EXPECT(element_bytes == 12, UsageError,
                  container.path() + ": a velocity field is float32 x 3 (12 bytes a point), this one has " +
                      std::to_string(element_bytes));
  const std::uint64_t block_points = layout.block_points();
  std::vector<std::uint64_t> offsets(layout.block_count(), 0);  // file offset of each block
  for (const auto& chunk : container.chunks_of(frame, field)) {
    HEADRACE_EXPECT(chunk.codec == format::CodecId::none && chunk.first_element % block_points == 0 &&
                        chunk.element_count % block_points == 0,
                    UsageError,
                    container.path() + ": offset " + std::to_string(chunk.offset) +
                        ": the block cache reads whole blocks of uncompressed chunks");
    for (std::uint64_t b = 0; b < chunk.element_count / block_points; ++b) {
      const std::uint64_t unit = chunk.first_element / block_points + b;
      HEADRACE_EXPECT(unit < offsets.size(), UsageError, container.path() + ": more points than the grid has");
      offsets[unit] = chunk.offset + b * block_points * element_bytes;
    }
  }
  return offsets;
}

BlockCache::Loader container_block_loader(std::shared_ptr<io::Backend> backend, const format::Container& container,
                                          std::uint32_t frame, std::uint32_t field, const BlockLayout& layout) {
  auto offsets = block_offsets(container, frame, field, layout);
  const std::uint64_t block_bytes = layout.block_points() * container.fields().at(field).element_bytes();
  return [backend = std::move(backend), offsets = std::move(offsets), block_bytes](std::uint64_t unit,
                                                                                   std::span<std::byte> into) {
    HEADRACE_EXPECT(unit < offsets.size() && into.size() >= block_bytes, UsageError,
                    "block " + std::to_string(unit) + " is not in the grid");
    backend->submit({{offsets[unit], block_bytes, into.data()}})->check();
  };
}

}  // namespace headrace::workloads::streamlines
