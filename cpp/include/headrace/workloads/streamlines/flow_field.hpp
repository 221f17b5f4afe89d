// A flow field's container opened for tracing: its velocity field, the frame, and the layout named by
// its attributes.
#pragma once

#include <cstdint>
#include <string>

#include "headrace/format/container.hpp"

namespace headrace::workloads::streamlines {

struct FlowField {
  format::Container container;
  std::uint32_t field = 0;
  std::uint32_t frame = 0;
  std::string layout;  // "blocks" or "hilbert"
};

// Throws UsageError naming the path for a missing frame, a missing velocity field or another layout.
[[nodiscard]] FlowField open_flow(const std::string& path, std::uint32_t frame);

}  // namespace headrace::workloads::streamlines
