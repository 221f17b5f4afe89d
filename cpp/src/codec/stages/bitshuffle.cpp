// bitshuffle: the bits of each group of 8 elements of `width` bytes as bit planes (bit 0 of every
// element, then bit 1, ...), as the bitshuffle library lays them out per block; the elements past the
// last whole group of 8 stay as they are (docs/codecs/bitshuffle.md).
#include "headrace/codec/cpu/filters.hpp"
#include "headrace/codec/gpu/filters.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {
namespace {

class Bitshuffle final : public FilterStage {
 public:
  explicit Bitshuffle(std::uint32_t width) : width_(width) {}
  std::string_view name() const noexcept override { return "bitshuffle"; }
  std::string configuration() const override { return "width=" + std::to_string(width_); }
  std::vector<std::byte> encode(std::span<const std::byte> raw) const override {
    std::vector<std::byte> out(raw.size());
    cpu::bit_shuffle(raw, out, width_);
    return out;
  }
  void decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    if (in.size() != out.size()) fail_decode(where, *this, std::to_string(out.size()) + " bytes", std::to_string(in.size()));
    cpu::bit_unshuffle(in, out, width_);
  }
  void undo_on_gpu(const gpu::FilterKernels& kernels, headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out,
                   std::uint64_t size, headrace::gpu::CUstream stream) const override {
    const std::uint64_t n = size / width_ / 8 * 8, planes = n * width_;
    if (n > 0) kernels.bit_unshuffle(in, out, n, width_, stream);
    kernels.copy(in + planes, out + planes, size - planes, stream);
  }

 private:
  std::uint32_t width_;
};

}  // namespace

std::unique_ptr<Stage> make_bitshuffle(StageConfig& config, const ElementShape& shape) {
  return std::make_unique<Bitshuffle>(static_cast<std::uint32_t>(config.integer("width", shape.value_bytes(), 1, 64)));
}

extern constexpr StageEntry bitshuffle_stage{"bitshuffle", StageKind::filter, "bit planes of each group of 8 elements",
                                     make_bitshuffle};

}  // namespace headrace::codec::stages
