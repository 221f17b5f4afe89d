// The GPU tracer (issue 5): the units a round of half-lines asks for are read by the engine's queue
// into a cache resident in GPU memory, and every half-line steps on its own GPU thread
// (resident_lines.hpp) until it ends or needs an absent unit; between rounds the host loads the units
// most asked for, evicting those the last round did not read. On the host (device -1) the same rounds
// run on CPU threads over host memory: the reference the GPU's lines are compared with.
#pragma once

#include <vector>

#include "headrace/workloads/streamlines/flow_field.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"

namespace headrace::workloads::streamlines {

// Throws UsageError for a cache of fewer than 8 units, UnavailableError without a GPU or without the
// kernels (a build without nvcc), the queue's error for a unit that could not be read, and UsageError
// when rounds stop making progress (a cache too small for the steps of one round).
[[nodiscard]] ContainerTraceRun trace_resident(const FlowField& flow, const std::vector<Vec3>& seeds,
                                               const ContainerTraceOptions& options);

}  // namespace headrace::workloads::streamlines
