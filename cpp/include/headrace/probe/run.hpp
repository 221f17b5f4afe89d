// `headrace probe`: raw read bandwidth of the device holding a file, over the grid of config.hpp.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "headrace/probe/config.hpp"
#include "headrace/probe/point.hpp"

namespace headrace::probe {

// Called on the thread that called run_probe after each point, with the points done so far (1-based)
// and the total. False stops the probe there (a time budget): run_probe returns the points measured.
// An exception it throws stops the probe and propagates out of run_probe.
using ProgressCallback =
    std::function<bool(std::size_t points_done, std::size_t points_total, const ProbePoint& point)>;

// Prepares the test file (prepare_test_file), picks the I/O route (choose_io_path) and measures every
// point of expand_grid(config) in that order. Each thread opens its own backend and keeps queue_depth
// reads of one block in flight, each into its own 4 KiB-aligned buffer.
[[nodiscard]] std::vector<ProbePoint> run_probe(const ProbeConfig& config, const ProgressCallback& progress = {});

}  // namespace headrace::probe
