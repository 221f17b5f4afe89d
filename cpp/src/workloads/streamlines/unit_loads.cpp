#include "unit_loads.hpp"

#include "headrace/workloads/streamlines/blocked_field.hpp"

namespace headrace::workloads::streamlines::resident {

UnitTable block_table(const FlowField& flow, const BlockLayout& layout) {
  UnitTable table{layout.block_points() * point_bytes, block_offsets(flow.container, flow.frame, flow.field, layout), {}};
  table.size.assign(table.offset.size(), table.unit_bytes);
  return table;
}

std::string unit_name(const std::string& path, const UnitTable& table, std::uint64_t unit) {
  return path + ": offset " + std::to_string(table.offset[unit]) + ": velocity unit " + std::to_string(unit);
}

}  // namespace headrace::workloads::streamlines::resident
