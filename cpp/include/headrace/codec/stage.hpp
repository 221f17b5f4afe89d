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

#include "headrace/detail/enum_names.hpp"
#include "headrace/format/dtype.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/shim/nvcomp.hpp"

namespace headrace::codec {

namespace gpu {
class FilterKernels;
}

enum class StageKind : std::uint8_t { filter, codec };
inline constexpr detail::EnumNames<StageKind, 2> stage_kind_names{{{StageKind::filter, "filter"}, {StageKind::codec, "codec"}}};
[[nodiscard]] constexpr const char* to_string(StageKind kind) noexcept { return detail::name_of(stage_kind_names, kind); }

// What a chain's stages may assume about the bytes: elements of `components` values of `dtype`, and for
// grids the points along the fastest axis (delta's rows). Only stages written without their
// configuration take defaults from it; a stored chain names every value.
struct ElementShape {
  format::DType dtype = format::DType::uint8;
  std::uint32_t components = 1;
  std::uint64_t fastest_axis_points = 0;  // 0: not a grid
  bool known = true;                      // false for a stored chain: no field to check a stage against
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

// A codec cuts a chunk into independent blocks of `block` raw bytes (its key `block`; 0: one stream for
// the whole chunk), each encoded alone, so that nvCOMP decodes the blocks of a frame's chunks in
// parallel (it gives a block, not a chunk, to a thread block: 4 MiB chunks in one stream each leave
// most of a GPU idle). The stored bytes of a blocked chunk (docs/codecs/README.md):
//   u32 block_count, u32 0, block_count x u32 stored size, zeros to a multiple of 16,
//   then each block's stored bytes, each starting at a multiple of 16.
class CodecStage : public Stage {
 public:
  [[nodiscard]] StageKind kind() const noexcept final { return StageKind::codec; }
  [[nodiscard]] std::uint64_t block_bytes() const noexcept { return block_; }
  std::vector<std::byte> encode(std::span<const std::byte> raw) const final;
  void decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const final;

  // Where a chunk's blocks lie: their stored bytes in the chunk's stored bytes, their raw bytes in the
  // chunk. One block (the whole chunk) when block_bytes() is 0. Throws CodecError starting with `where`
  // for a block table that does not fit the stored bytes or the raw size.
  struct Block {
    std::uint64_t stored_offset, stored_size, raw_offset, raw_size;
  };
  [[nodiscard]] std::vector<Block> blocks(std::span<const std::byte> stored, std::uint64_t raw_size, const std::string& where) const;
  // The raw blocks of a chunk (the chunk itself when block_bytes() is 0), and a chunk's stored bytes from
  // its blocks' stored bytes: what an encoder of blocks elsewhere (nvCOMP on a GPU) needs.
  [[nodiscard]] std::vector<std::span<const std::byte>> raw_blocks(std::span<const std::byte> raw) const;
  [[nodiscard]] std::vector<std::byte> join_blocks(std::vector<std::vector<std::byte>> encoded) const;

  // How nvCOMP's batched API encodes and decodes a block (the decoder sets the backend).
  [[nodiscard]] virtual shim::NvcompAlgorithm algorithm() const noexcept = 0;
  [[nodiscard]] virtual shim::NvcompOptions compress_options() const = 0;
  [[nodiscard]] virtual shim::NvcompOptions decompress_options() const = 0;
  // The largest raw block it encodes (nvCOMP's limit, or the CPU encoder's when smaller).
  [[nodiscard]] virtual std::uint64_t max_block_bytes() const noexcept = 0;
  // The largest raw chunk it encodes: one block, or with blocks any chunk the format holds.
  [[nodiscard]] std::uint64_t max_raw_chunk_bytes() const noexcept;

 protected:
  explicit CodecStage(std::uint64_t block) : block_(block) {}
  // One block (or the whole chunk) each way; decode_block's `out` has exactly its raw size.
  [[nodiscard]] virtual std::vector<std::byte> encode_block(std::span<const std::byte> raw) const = 0;
  virtual void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const = 0;
  // configuration() of a codec: its own keys, then "block=N".
  [[nodiscard]] std::string with_block(const std::string& keys) const;

 private:
  std::uint64_t block_;
};

// A codec's `block` key: a multiple of 4096 up to `most` (its max_block_bytes), or 0; `fallback` when absent.
[[nodiscard]] std::uint64_t read_block(StageConfig& config, std::uint64_t fallback, std::uint64_t most);
// The block a codec takes when its chain does not say: 64 KiB, the chunk size nvCOMP decodes fastest.
inline constexpr std::uint64_t default_block_bytes = std::uint64_t{1} << 16;

// The `where` of errors: "<where>: stage <spec>: ".
[[nodiscard]] std::string stage_context(const std::string& where, const Stage& stage);

}  // namespace headrace::codec
