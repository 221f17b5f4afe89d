// split: elements of `components` values of `width` bytes, interleaved (xyz xyz ...), stored one
// component after another (xx.. yy.. zz..), so each stream holds like values (docs/codecs/split.md).
#include <cstring>

#include "headrace/codec/cpu/filters.hpp"
#include "headrace/codec/gpu/filters.hpp"
#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {
namespace {

class Split final : public FilterStage {
 public:
  Split(std::uint32_t components, std::uint32_t width) : components_(components), width_(width) {}
  std::string_view name() const noexcept override { return "split"; }
  std::string configuration() const override {
    return "components=" + std::to_string(components_) + ",width=" + std::to_string(width_);
  }
  std::vector<std::byte> encode(std::span<const std::byte> raw) const override {
    std::vector<std::byte> out(raw.size());
    cpu::transpose(raw, out, elements(raw.size(), "chunk"), components_, width_);
    return out;
  }
  void decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    if (in.size() != out.size() || in.size() % (std::uint64_t{components_} * width_) != 0)
      fail_decode(where, *this, "whole elements of " + std::to_string(components_ * width_) + " bytes",
                  std::to_string(in.size()) + " bytes");
    cpu::transpose(in, out, components_, in.size() / (std::uint64_t{components_} * width_), width_);
  }
  void undo_on_gpu(const gpu::FilterKernels& kernels, headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out,
                   std::uint64_t size, headrace::gpu::CUstream stream) const override {
    kernels.transpose(in, out, components_, elements(size, "chunk"), width_, stream);
  }

 private:
  std::uint64_t elements(std::uint64_t size, const char* what) const {
    const std::uint64_t element = std::uint64_t{components_} * width_;
    HEADRACE_EXPECT(size % element == 0, UsageError,
                    "stage " + spec() + ": a " + what + " of " + std::to_string(size) + " bytes is not whole elements of " +
                        std::to_string(element) + " bytes");
    return size / element;
  }
  std::uint32_t components_, width_;
};

}  // namespace

std::unique_ptr<Stage> make_split(StageConfig& config, const ElementShape& shape) {
  const auto components = config.integer("components", shape.components, 1, 1024);
  const auto width = config.integer("width", shape.value_bytes(), 1, 64);
  return std::make_unique<Split>(static_cast<std::uint32_t>(components), static_cast<std::uint32_t>(width));
}

extern constexpr StageEntry split_stage{"split", StageKind::filter, "interleaved components one after another (xyz xyz -> xx yy zz)",
                                     make_split};

}  // namespace headrace::codec::stages
