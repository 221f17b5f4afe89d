// delta and xor: each element of `width` bytes (an unsigned integer, so floats round-trip bit for bit)
// minus, or xor, the one before it along rows of `row` elements: the fastest axis of a grid, so
// neighbours differ little (docs/codecs/delta.md, docs/codecs/xor.md).
#include <cstring>

#include "headrace/codec/cpu/filters.hpp"
#include "headrace/codec/gpu/filters.hpp"
#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {
namespace {

class Difference final : public FilterStage {
 public:
  Difference(filters::Difference kind, std::uint32_t width, std::uint64_t row) : kind_(kind), width_(width), row_(row) {}
  std::string_view name() const noexcept override { return kind_ == filters::Difference::delta ? "delta" : "xor"; }
  std::string configuration() const override { return "width=" + std::to_string(width_) + ",row=" + std::to_string(row_); }
  std::vector<std::byte> encode(std::span<const std::byte> raw) const override {
    std::vector<std::byte> out(raw.size());
    cpu::difference(raw, out, row_, width_, kind_);
    return out;
  }
  void decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    if (in.size() != out.size() || in.size() % width_ != 0)
      fail_decode(where, *this, "whole elements of " + std::to_string(width_) + " bytes", std::to_string(in.size()) + " bytes");
    std::memcpy(out.data(), in.data(), in.size());
    cpu::undifference(out, row_, width_, kind_);
  }
  bool undoes_in_place() const noexcept override { return true; }
  void undo_on_gpu(const gpu::FilterKernels& kernels, headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr,
                   std::uint64_t size, headrace::gpu::CUstream stream) const override {
    kernels.undifference(in, size / width_, row_, width_, kind_, stream);
  }

 private:
  filters::Difference kind_;
  std::uint32_t width_;
  std::uint64_t row_;
};

// Rows: a grid's fastest axis; otherwise 1024 elements (each row's first element is stored as it is, and
// a GPU thread undoes one row).
std::unique_ptr<Stage> make_difference(filters::Difference kind, StageConfig& config, const ElementShape& shape) {
  const std::uint32_t value = shape.value_bytes();
  const bool integer_width = value == 1 || value == 2 || value == 4 || value == 8;
  const auto width = config.integer("width", integer_width ? std::optional<std::int64_t>(value) : std::nullopt, 1, 8);
  HEADRACE_EXPECT(width == 1 || width == 2 || width == 4 || width == 8, UsageError,
                  "stage " + config.stage() + ": width=" + std::to_string(width) + " is not 1, 2, 4 or 8");
  const auto row = config.integer("row", shape.fastest_axis_points > 0 ? shape.fastest_axis_points : 1024, 1,
                                  std::int64_t{1} << 40);
  return std::make_unique<Difference>(kind, static_cast<std::uint32_t>(width), static_cast<std::uint64_t>(row));
}

}  // namespace

std::unique_ptr<Stage> make_delta(StageConfig& config, const ElementShape& shape) {
  return make_difference(filters::Difference::delta, config, shape);
}

std::unique_ptr<Stage> make_xor(StageConfig& config, const ElementShape& shape) {
  return make_difference(filters::Difference::xor_, config, shape);
}

extern constexpr StageEntry delta_stage{"delta", StageKind::filter, "each element minus the one before it along a row",
                                     make_delta};
extern constexpr StageEntry xor_stage{"xor", StageKind::filter, "each element xor the one before it along a row",
                                     make_xor};

}  // namespace headrace::codec::stages
