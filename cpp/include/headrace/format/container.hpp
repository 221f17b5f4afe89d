// An opened .hrc container: the superblock and the whole index, read and validated once at open
// (two reads, no read-after-read dependency afterwards). Holds no file descriptor: data is read
// through an io backend, which knows how it wants the file opened.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "headrace/format/codec_id.hpp"
#include "headrace/format/dtype.hpp"

namespace headrace::format {

struct FieldInfo {
  std::string name;
  DType dtype = DType::float32;
  std::uint32_t components = 1;
  [[nodiscard]] std::uint64_t element_bytes() const noexcept { return dtype_size(dtype) * components; }
};

struct BoundingBox {
  std::array<double, 3> min{};
  std::array<double, 3> max{};
};

struct FrameInfo {
  double time = 0.0;
  BoundingBox bbox;
};

// Where the elements of one field of one frame live.
struct FrameFieldInfo {
  std::uint64_t element_count = 0;
  std::uint64_t first_chunk = 0;
  std::uint32_t chunk_count = 0;
};

struct ChunkInfo {
  std::uint64_t offset = 0;
  std::uint64_t stored_size = 0;
  std::uint64_t raw_size = 0;
  std::uint64_t first_element = 0;
  std::uint64_t element_count = 0;
  std::uint64_t checksum = 0;
  std::uint64_t range_index = 0;
  CodecId codec = CodecId::none;
  ChecksumKind checksum_kind = ChecksumKind::xxh3_64;
  std::uint32_t frame = 0;
  std::uint32_t field = 0;
  // codec chain: the index of its chain in Container::chains(), and that chain's spec (shared).
  std::uint32_t chain = 0;
  std::shared_ptr<const std::string> chain_spec;
};

// How a chunk's stored bytes decode, as one text: its plain codec's name ("none", "lz4", ...), or its
// chain's stored text (no chain's text is a plain codec's name: a stored zstd has its level written).
[[nodiscard]] inline std::string coding_of(const ChunkInfo& chunk) {
  return chunk.chain_spec ? *chunk.chain_spec : std::string(to_string(chunk.codec));
}

// A codec chain of the index (docs/format.md 5.10): its stages as text, and whether it is lossy.
struct ChainInfo {
  std::shared_ptr<const std::string> spec;
  std::optional<double> error_bound;  // set when lossy
};

using AttributeValue = std::variant<std::vector<std::int64_t>, std::vector<double>, std::string>;

class Container {
 public:
  // Reads and validates superblock and index; throws the BadDataError subclass docs/format.md names,
  // or FileNotFoundError.
  [[nodiscard]] static Container open(const std::string& path);
  // Parses already-read bytes (the fuzz target and tests use this); file_size is the real size.
  [[nodiscard]] static Container parse(const std::string& path, std::span<const std::byte> superblock,
                                       std::span<const std::byte> index, std::uint64_t file_size);

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t file_size() const noexcept { return file_size_; }
  [[nodiscard]] std::uint64_t index_offset() const noexcept { return index_offset_; }
  [[nodiscard]] std::uint16_t version_minor() const noexcept { return version_minor_; }
  // A publishing writer's file (format 1.4, docs/format.md 6.1): what it has published so far; file_size()
  // is the end of that, the file may be longer.
  [[nodiscard]] bool growing() const noexcept { return growing_; }

  [[nodiscard]] const std::vector<FieldInfo>& fields() const noexcept { return fields_; }
  [[nodiscard]] const std::vector<FrameInfo>& frames() const noexcept { return frames_; }
  [[nodiscard]] const std::vector<ChunkInfo>& chunks() const noexcept { return chunks_; }
  [[nodiscard]] const std::vector<ChainInfo>& chains() const noexcept { return chains_; }
  [[nodiscard]] const std::map<std::string, AttributeValue>& attributes() const noexcept { return attributes_; }

  // Throws UsageError naming the fields there are.
  [[nodiscard]] std::uint32_t field_index(const std::string& name) const;
  // Throws UsageError for an index out of range.
  [[nodiscard]] const FrameFieldInfo& frame_field(std::uint32_t frame, std::uint32_t field) const;
  [[nodiscard]] std::span<const ChunkInfo> chunks_of(std::uint32_t frame, std::uint32_t field) const;
  // Per component minima and maxima of one chunk.
  [[nodiscard]] std::span<const double> range_min(const ChunkInfo& chunk) const;
  [[nodiscard]] std::span<const double> range_max(const ChunkInfo& chunk) const;
  // Every chunk's minima then maxima, at its range_index (the index's ranges section).
  [[nodiscard]] const std::vector<double>& ranges() const noexcept { return ranges_; }
  // Sum of stored and raw sizes of every chunk.
  [[nodiscard]] std::uint64_t stored_bytes() const noexcept;
  [[nodiscard]] std::uint64_t raw_bytes() const noexcept;

  // Throws ChecksumMismatchError naming the file, the chunk's offset and both checksums.
  void verify_chunk(const ChunkInfo& chunk, std::span<const std::byte> stored) const;

 private:
  std::string path_;
  std::uint64_t file_size_ = 0;
  std::uint64_t index_offset_ = 0;
  std::uint16_t version_minor_ = 0;
  bool growing_ = false;
  std::vector<FieldInfo> fields_;
  std::vector<FrameInfo> frames_;
  std::vector<FrameFieldInfo> frame_fields_;
  std::vector<ChunkInfo> chunks_;
  std::vector<ChainInfo> chains_;
  std::vector<double> ranges_;
  std::map<std::string, AttributeValue> attributes_;
};

}  // namespace headrace::format
