#include "unit_loads.hpp"

#include <algorithm>

#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"

namespace headrace::workloads::streamlines::resident {

UnitTable unit_table(const FlowField& flow, const BlockLayout& layout, std::uint32_t frame) {
  UnitTable table{layout.block_points() * point_bytes, block_offsets(flow.container, frame, flow.field, layout), {}};
  table.size.assign(table.offset.size(), table.unit_bytes);
  return table;
}

UnitTable unit_table(const FlowField& flow, const HilbertUnits& units, std::uint32_t frame) {
  const FieldRange range = contiguous_field_range(flow.container, frame, flow.field);
  UnitTable table{units.unit_points * point_bytes, {}, {}};
  for (std::uint64_t offset = range.start; offset < range.end; offset += table.unit_bytes) {
    table.offset.push_back(offset);
    table.size.push_back(std::min(table.unit_bytes, range.end - offset));
  }
  return table;
}

std::string unit_name(const std::string& path, const UnitTable& table, std::uint64_t unit) {
  return path + ": offset " + std::to_string(table.offset[unit]) + ": velocity unit " + std::to_string(unit);
}

}  // namespace headrace::workloads::streamlines::resident
