// A codec stage (issue 19, docs/codecs/): one named step of a chain, `name(key=value,...)` in the index.
// Filters come first and keep the size (array to array: they rearrange or difference the elements so a
// codec finds redundancy), then one codec turns the bytes into fewer bytes (bytes to bytes). Every stage
// encodes and decodes on the CPU where a CPU library can, and says how a GPU undoes it: a filter by the
// kernels of codec/gpu/filters.hpp, a codec by nvCOMP's batched decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/format/dtype.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/shim/nvcomp.hpp"

namespace headrace::codec {

namespace gpu {
class FilterKernels;
}

enum class StageKind : std::uint8_t { filter, codec };
[[nodiscard]] const char* to_string(StageKind kind) noexcept;

// What a chain's stages may assume about the bytes: elements of `components` values of `dtype`, and for
// grids the points along the fastest axis (delta's rows). Only stages written without their
// configuration take defaults from it; a stored chain names every value.
struct ElementShape {
  format::DType dtype = format::DType::uint8;
  std::uint32_t components = 1;
  std::uint64_t fastest_axis_points = 0;  // 0: not a grid
  [[nodiscard]] std::uint32_t value_bytes() const noexcept { return static_cast<std::uint32_t>(format::dtype_size(dtype)); }
};

// A stage's `key=value` pairs as written, read once into the stage's typed configuration: every getter
// checks its range and names the stage and key; unread keys are refused by done().
class StageConfig {
 public:
  // Parses "key=value,key=value" (the text inside the parentheses); throws UsageError naming `stage`.
  // every_value_written (a stored chain): a getter refuses to fall back to its default.
  StageConfig(std::string stage, std::string_view text, bool every_value_written = false);

  [[nodiscard]] const std::string& stage() const noexcept { return stage_; }
  [[nodiscard]] bool has(const std::string& key) const { return values_.count(key) != 0; }
  // An integer in [low, high], or `fallback` when absent (nullopt: the key is required).
  [[nodiscard]] std::int64_t integer(const std::string& key, std::optional<std::int64_t> fallback, std::int64_t low,
                                     std::int64_t high);
  // A finite number in (0, high] (error bounds), or `fallback` when absent.
  [[nodiscard]] double positive(const std::string& key, std::optional<double> fallback, double high);
  // One of `names`, or `fallback` when absent.
  [[nodiscard]] std::string choice(const std::string& key, std::optional<std::string> fallback,
                                   const std::vector<std::string>& names);
  // Throws UsageError naming a key no getter read (a typo, or a key of another stage).
  void done() const;

 private:
  [[nodiscard]] std::optional<std::string> take(const std::string& key);
  std::string stage_;
  bool every_value_written_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> read_;
};

class Stage {
 public:
  virtual ~Stage() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual StageKind kind() const noexcept = 0;
  // Every key, in the stage's order: "width=4" ("" for none). Stored in the index.
  [[nodiscard]] virtual std::string configuration() const = 0;
  // "name(configuration)", or "name" when it has none.
  [[nodiscard]] std::string spec() const;
  // For lossy stages: the largest difference between a decoded value and the value written.
  [[nodiscard]] virtual std::optional<double> error_bound() const { return std::nullopt; }

  // Whether the CPU can encode (decode) it here; when not, *why says what is missing.
  [[nodiscard]] virtual bool cpu_encodes(std::string* why) const;
  [[nodiscard]] virtual bool cpu_decodes(std::string* why) const;
  // The stage's output for `raw` (a filter returns as many bytes). Throws UnavailableError when
  // cpu_encodes() is false.
  [[nodiscard]] virtual std::vector<std::byte> encode(std::span<const std::byte> raw) const = 0;
  // Decodes `in` into `out`, which has exactly the decoded size; throws CodecError starting with
  // `where` (the chunk's label) when the bytes do not decode to exactly out.size() bytes.
  virtual void decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const = 0;

 protected:
  Stage() = default;
};

class FilterStage : public Stage {
 public:
  [[nodiscard]] StageKind kind() const noexcept final { return StageKind::filter; }
  // Whether undo_on_gpu() works in place (then `in` and `out` are the same).
  [[nodiscard]] virtual bool undoes_in_place() const noexcept { return false; }
  // Undoes the filter on `size` bytes at `in` into `out` on the stream.
  virtual void undo_on_gpu(const gpu::FilterKernels& kernels, headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out,
                           std::uint64_t size, headrace::gpu::CUstream stream) const = 0;
};

class CodecStage : public Stage {
 public:
  [[nodiscard]] StageKind kind() const noexcept final { return StageKind::codec; }
  // How nvCOMP's batched API encodes and decodes it (the decoder sets the backend).
  [[nodiscard]] virtual shim::NvcompAlgorithm algorithm() const noexcept = 0;
  [[nodiscard]] virtual shim::NvcompOptions compress_options() const = 0;
  [[nodiscard]] virtual shim::NvcompOptions decompress_options() const = 0;
  // The largest raw chunk it encodes (nvCOMP's limit, or the CPU encoder's when smaller).
  [[nodiscard]] virtual std::uint64_t max_raw_chunk_bytes() const noexcept = 0;
};

// The `where` of errors: "<where>: stage <spec>: ".
[[nodiscard]] std::string stage_context(const std::string& where, const Stage& stage);

}  // namespace headrace::codec
