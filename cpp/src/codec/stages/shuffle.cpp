// shuffle: byte i of every element of `width` bytes together (all first bytes, then all second bytes,
// ...), as blosc's and HDF5's shuffle do; bytes past the last whole element stay as they are
// (docs/codecs/shuffle.md).
#include "headrace/codec/cpu/filters.hpp"
#include "headrace/codec/gpu/filters.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {
namespace {

class Shuffle final : public FilterStage {
 public:
  explicit Shuffle(std::uint32_t width) : width_(width) {}
  std::string_view name() const noexcept override { return "shuffle"; }
  std::string configuration() const override { return "width=" + std::to_string(width_); }
  std::vector<std::byte> encode(std::span<const std::byte> raw) const override {
    std::vector<std::byte> out(raw.size());
    cpu::byte_shuffle(raw, out, width_);
    return out;
  }
  void decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    if (in.size() != out.size()) fail_decode(where, *this, std::to_string(out.size()) + " bytes", std::to_string(in.size()));
    cpu::byte_unshuffle(in, out, width_);
  }
  void undo_on_gpu(const gpu::FilterKernels& kernels, headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out,
                   std::uint64_t size, headrace::gpu::CUstream stream) const override {
    const std::uint64_t n = size / width_, whole = n * width_;
    if (n > 0) kernels.transpose(in, out, width_, n, 1, stream);
    kernels.copy(in + whole, out + whole, size - whole, stream);
  }

 private:
  std::uint32_t width_;
};

}  // namespace

std::unique_ptr<Stage> make_shuffle(StageConfig& config, const ElementShape& shape) {
  return std::make_unique<Shuffle>(static_cast<std::uint32_t>(config.integer("width", shape.value_bytes(), 1, 64)));
}

extern constexpr StageEntry shuffle_stage{"shuffle", StageKind::filter, "byte i of every element together (blosc's and HDF5's shuffle)",
                                     make_shuffle};

}  // namespace headrace::codec::stages
