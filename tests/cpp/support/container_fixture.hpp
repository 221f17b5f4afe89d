// Small containers written with the real writer, and byte-level file surgery to corrupt them.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "headrace/codec/chain_writer.hpp"
#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/format/writer.hpp"

namespace headrace::testing {

// Deterministic float32 particles: 8 components, value = element * 8 + component (exact in float).
inline std::vector<float> particle_values(std::uint64_t count, float base = 0.0f) {
  std::vector<float> values(count * 8);
  for (std::uint64_t i = 0; i < values.size(); ++i) values[i] = base + static_cast<float>(i % 1000003);
  return values;
}

inline std::span<const std::byte> as_bytes(const std::vector<float>& values) {
  return std::as_bytes(std::span<const float>(values));
}

// Writes frames x one "particles" field (float32 x 8) of `count` elements, chunked small.
inline void write_particles(const std::string& path, std::uint32_t frames, std::uint64_t count,
                            format::CodecId codec = format::CodecId::none, std::uint64_t chunk_size_bytes = 4096) {
  format::WriterOptions options;
  options.chunk_size_bytes = chunk_size_bytes;
  if (codec != format::CodecId::none) codec::store_fields_with(options, {codec::Chain::of_codec(codec)});
  format::ContainerWriter writer(path, {{"particles", format::DType::float32, 8}}, options);
  writer.set_attribute("source_format", std::string("test"));
  for (std::uint32_t t = 0; t < frames; ++t) {
    const auto frame = writer.add_frame(t * 0.5, format::BoundingBox{{0, 0, 0}, {1, 1, 1}});
    const auto values = particle_values(count, static_cast<float>(t));
    writer.write_field(frame, 0, as_bytes(values));
  }
  writer.close();
}

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

inline void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// After editing index or superblock bytes, recomputes both checksums so the edit reaches the
// deeper checks instead of failing the checksum.
inline void reseal(std::vector<std::byte>& file) {
  format::layout::Superblock block;
  std::memcpy(&block, file.data(), sizeof block);
  block.index_checksum = format::xxh3_64(std::span<const std::byte>(file).subspan(block.index_offset, block.index_size));
  std::memcpy(file.data(), &block, sizeof block);
  block.superblock_checksum =
      format::xxh3_64(std::span<const std::byte>(file).first(format::layout::Superblock::checked_bytes));
  std::memcpy(file.data(), &block, sizeof block);
}

inline format::layout::Superblock superblock_of(const std::vector<std::byte>& file) {
  format::layout::Superblock block;
  std::memcpy(&block, file.data(), sizeof block);
  return block;
}

}  // namespace headrace::testing
