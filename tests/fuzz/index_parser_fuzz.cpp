// libFuzzer target for the index parser. The input is a superblock (128 bytes) followed by an index;
// both checksums are recomputed over the mutated bytes so that mutations reach the structural checks
// behind them. Every input must either parse or throw a headrace::BadDataError; anything else (a
// crash, a sanitizer report, another exception) is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/format/container.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/format/writer.hpp"

namespace {

using namespace headrace;
namespace layout = format::layout;

// HEADRACE_FUZZ_WRITE_SEED=path: writes a valid seed input (a real container's superblock + index).
void write_seed(const char* seed_path) {
  const std::string container = std::string(seed_path) + ".hrc";
  {
    format::WriterOptions options;
    options.chunk_size_bytes = 256;
    format::ContainerWriter writer(container, {{"particles", format::DType::float32, 8}, {"id", format::DType::int64, 1}}, options);
    writer.set_attribute("grid_dims", std::vector<std::int64_t>{2, 3, 4});
    writer.set_attribute("source_format", std::string("fuzz"));
    for (int t = 0; t < 2; ++t) {
      const auto frame = writer.add_frame(t, format::BoundingBox{{0, 0, 0}, {1, 1, 1}});
      std::vector<float> particles(8 * 20, 0.5f);
      std::vector<std::int64_t> ids(20, t);
      writer.write_field(frame, 0, std::as_bytes(std::span<const float>(particles)));
      writer.write_field(frame, 1, std::as_bytes(std::span<const std::int64_t>(ids)));
    }
    writer.close();
  }
  FILE* in = std::fopen(container.c_str(), "rb");
  std::vector<unsigned char> file(1 << 20);
  file.resize(std::fread(file.data(), 1, file.size(), in));
  std::fclose(in);
  layout::Superblock block;
  std::memcpy(&block, file.data(), sizeof block);
  FILE* out = std::fopen(seed_path, "wb");
  std::fwrite(file.data(), 1, sizeof block, out);
  std::fwrite(file.data() + block.index_offset, 1, block.index_size, out);
  std::fclose(out);
  std::remove(container.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("HEADRACE_FUZZ_WRITE_SEED")) {
    write_seed(seed);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < sizeof(layout::Superblock)) return 0;
  std::vector<std::byte> superblock(reinterpret_cast<const std::byte*>(data),
                                    reinterpret_cast<const std::byte*>(data) + sizeof(layout::Superblock));
  std::span<const std::byte> index(reinterpret_cast<const std::byte*>(data) + sizeof(layout::Superblock),
                                   size - sizeof(layout::Superblock));
  // Make the outer frame consistent so the parser's inner checks are what gets exercised.
  layout::Superblock block;
  std::memcpy(&block, superblock.data(), sizeof block);
  block.index_size = index.size();
  block.index_offset = layout::align_up(std::max<std::uint64_t>(block.index_offset, layout::superblock_bytes));
  if (block.index_offset > (std::uint64_t{1} << 40)) block.index_offset = layout::superblock_bytes;
  block.file_size = layout::align_up(block.index_offset + index.size());
  block.index_checksum = format::xxh3_64(index);
  std::memcpy(superblock.data(), &block, sizeof block);
  block.superblock_checksum = format::xxh3_64(std::span<const std::byte>(superblock).first(layout::Superblock::checked_bytes));
  std::memcpy(superblock.data(), &block, sizeof block);
  try {
    const auto container = format::Container::parse("fuzz.hrc", superblock, index, block.file_size);
    for (std::uint32_t t = 0; t < container.frames().size(); ++t)
      for (std::uint32_t f = 0; f < container.fields().size(); ++f)
        for (const auto& chunk : container.chunks_of(t, f)) (void)container.range_max(chunk);
  } catch (const BadDataError&) {
  }
  return 0;
}
