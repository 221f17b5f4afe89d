// A small velocity field written in native blocks, with its in-core copy: the shared subject of the
// streamline data-manager tests.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "headrace/format/writer.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "support/temp_directory.hpp"

namespace headrace::testing {

using workloads::streamlines::BlockLayout;

struct BlockedFlow {
  TempDirectory dir;
  std::string path = dir.file("flow.hrc");
  BlockLayout layout;
  std::vector<float> linear;  // x fastest over the whole grid: the in-core reference

  // A swirl around the grid's centre line, on nx x ny x nz points 0.25 apart, in blocks of 4^3 (partial at
  // the far edges, padded with zeros, where 4 does not divide a side).
  explicit BlockedFlow(int nx = 16, int ny = 12, int nz = 8) {
    layout.grid.dims[0] = nx, layout.grid.dims[1] = ny, layout.grid.dims[2] = nz;
    layout.grid.spacing[0] = layout.grid.spacing[1] = layout.grid.spacing[2] = 0.25f;
    layout.block[0] = layout.block[1] = layout.block[2] = 4;
    const auto& d = layout.grid.dims;
    linear.resize(3 * std::size_t(d[0]) * d[1] * d[2]);
    std::vector<float> blocked(3 * layout.block_count() * layout.block_points());
    for (int k = 0; k < d[2]; ++k)
      for (int j = 0; j < d[1]; ++j)
        for (int i = 0; i < d[0]; ++i) {
          const float x = 0.25f * i - 0.125f * nx, y = 0.25f * j - 0.125f * ny, z = 0.25f * k;
          const float v[3] = {-y + 0.1f * std::sin(z), x, 0.2f * std::cos(x * y)};
          const std::size_t n = i + std::size_t(d[0]) * (j + std::size_t(d[1]) * k);
          std::uint64_t element = 0;
          const std::uint64_t unit = layout.unit_of(i, j, k, element);
          for (int c = 0; c < 3; ++c) {
            linear[3 * n + c] = v[c];
            blocked[3 * (unit * layout.block_points() + element) + c] = v[c];
          }
        }
    format::WriterOptions options;
    options.chunk_size_bytes = 2 * layout.block_points() * 12;  // two blocks a chunk
    format::ContainerWriter writer(path, {{"velocity", format::DType::float32, 3}}, options);
    writer.set_attribute("layout", std::string("blocks"));
    writer.set_attribute("grid_dims", std::vector<std::int64_t>{nx, ny, nz});
    writer.set_attribute("block_dims", std::vector<std::int64_t>{4, 4, 4});
    writer.set_attribute("grid_origin", std::vector<double>{0, 0, 0});
    writer.set_attribute("grid_spacing", std::vector<double>{0.25, 0.25, 0.25});
    const auto frame = writer.add_frame(0.0, format::BoundingBox{{0, 0, 0}, {0.25 * (nx - 1), 0.25 * (ny - 1), 0.25 * (nz - 1)}});
    writer.write_field(frame, 0, std::as_bytes(std::span<const float>(blocked)));
    writer.close();
  }
};

}  // namespace headrace::testing
