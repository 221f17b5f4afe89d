// The on-disk records of format 1.x, byte for byte as docs/format.md tables them.
// Little-endian hosts only (checked below); readers memcpy records out of the index bytes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace headrace::format::layout {

static_assert(std::endian::native == std::endian::little, "headrace's format code assumes a little-endian host");

inline constexpr std::uint64_t alignment_bytes = 4096;
inline constexpr std::uint64_t superblock_bytes = 4096;
inline constexpr char superblock_magic[8] = {'H', 'E', 'A', 'D', 'R', 'A', 'C', 'E'};
inline constexpr char index_magic[8] = {'H', 'R', 'C', 'I', 'N', 'D', 'E', 'X'};
inline constexpr std::uint16_t version_major = 1;
// Each minor version admits what older readers reject by name: 1.1 codec 3 (gdeflate), 1.2 frame-fields
// of zero elements (empty frames), 1.3 codec 4 (a chain of stages). A writer writes the lowest version its file needs, so a file that
// uses neither stays 1.0.
inline constexpr std::uint16_t version_minor = 4;
inline constexpr std::uint16_t version_minor_gdeflate = 1;
inline constexpr std::uint16_t version_minor_empty_frames = 2;
inline constexpr std::uint16_t version_minor_chains = 3;  // 1.3: codec 4 (chain) and the chain table
inline constexpr std::uint16_t version_minor_growing = 4;  // 1.4: a publishing writer's file (docs/format.md 6.1)
inline constexpr std::uint32_t superblock_flag_growing = 1;
inline constexpr std::uint32_t max_chain_spec_bytes = 4095;
inline constexpr std::uint32_t max_name_bytes = 255;

enum class AttributeKind : std::uint8_t { int64 = 1, float64 = 2, string = 3 };

struct Superblock {
  char magic[8];
  std::uint16_t version_major;
  std::uint16_t version_minor;
  std::uint32_t flags;
  std::uint64_t index_offset;
  std::uint64_t index_size;
  std::uint64_t index_checksum;
  std::uint64_t file_size;
  std::uint64_t alignment;
  std::uint8_t reserved[64];
  std::uint64_t superblock_checksum;  // of bytes [0, checked_bytes)
  static constexpr std::size_t checked_bytes = 120;
};
static_assert(sizeof(Superblock) == 128);

struct IndexHeader {
  char magic[8];
  std::uint32_t field_count;
  std::uint32_t frame_count;
  std::uint64_t chunk_count;
  std::uint32_t attribute_count;
  std::uint32_t chain_count;  // 1.3; reserved (0) before
  std::uint64_t range_value_count;
  std::uint64_t heap_size;
  std::uint64_t chains_offset;  // 1.3: the chain records' offset in the heap; reserved (0) before
  std::uint8_t reserved1[8];
};
static_assert(sizeof(IndexHeader) == 64);

struct FieldRecord {
  std::uint32_t name_offset;
  std::uint32_t name_length;
  std::uint8_t dtype;
  std::uint8_t reserved0[3];
  std::uint32_t components;
  std::uint8_t reserved1[16];
};
static_assert(sizeof(FieldRecord) == 32);

struct FrameRecord {
  double time;
  double bbox_min[3];
  double bbox_max[3];
  std::uint8_t reserved[8];
};
static_assert(sizeof(FrameRecord) == 64);

struct FrameFieldRecord {
  std::uint64_t element_count;
  std::uint64_t first_chunk;
  std::uint32_t chunk_count;
  std::uint32_t reserved;
};
static_assert(sizeof(FrameFieldRecord) == 24);

struct ChunkRecord {
  std::uint64_t offset;
  std::uint64_t stored_size;
  std::uint64_t raw_size;
  std::uint64_t first_element;
  std::uint64_t element_count;
  std::uint64_t checksum;
  std::uint64_t range_index;
  std::uint8_t codec;
  std::uint8_t checksum_kind;
  std::uint8_t reserved[2];
  std::uint32_t chain;  // 1.3, codec 4: index into the chain table; else 0
};
static_assert(sizeof(ChunkRecord) == 64);

// 1.3: one codec chain (docs/format.md 5.10), 32 bytes, in the heap at the header's chains_offset.
inline constexpr std::uint32_t chain_flag_lossy = 1;
struct ChainRecord {
  std::uint32_t spec_offset;  // into the heap: UTF-8 "stage(key=value,...)|..."
  std::uint32_t spec_length;
  std::uint32_t flags;        // chain_flag_lossy
  std::uint32_t reserved0;
  double error_bound;         // lossy: the largest |decoded - written| of a value; else NaN
  std::uint8_t reserved1[8];
};
static_assert(sizeof(ChainRecord) == 32);

struct AttributeRecord {
  std::uint32_t name_offset;
  std::uint32_t name_length;
  std::uint8_t kind;
  std::uint8_t reserved[3];
  std::uint32_t count;
  std::uint64_t value_offset;
};
static_assert(sizeof(AttributeRecord) == 24);

[[nodiscard]] constexpr std::uint64_t align_up(std::uint64_t value) noexcept {
  return (value + alignment_bytes - 1) / alignment_bytes * alignment_bytes;
}

}  // namespace headrace::format::layout
