#include "headrace/format/container.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::format {
namespace {

using layout::alignment_bytes;

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

// Multiplies and adds sizes read from an untrusted index; any overflow is corruption.
struct CheckedSize {
  const std::string& path;
  std::uint64_t offset;
  std::uint64_t mul(std::uint64_t a, std::uint64_t b) const {
    std::uint64_t result = 0;
    HEADRACE_EXPECT_DATA(!__builtin_mul_overflow(a, b, &result), CorruptIndexError, path, offset,
                         "section sizes that fit in 64 bits", std::to_string(a) + " x " + std::to_string(b));
    return result;
  }
  std::uint64_t add(std::uint64_t a, std::uint64_t b) const {
    std::uint64_t result = 0;
    HEADRACE_EXPECT_DATA(!__builtin_add_overflow(a, b, &result), CorruptIndexError, path, offset,
                         "section sizes that fit in 64 bits", std::to_string(a) + " + " + std::to_string(b));
    return result;
  }
};

template <typename Record>
Record record_at(std::span<const std::byte> bytes, std::uint64_t at) {
  Record record;
  std::memcpy(&record, bytes.data() + at, sizeof(Record));
  return record;
}

class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int error_number = errno;
      throw FileNotFoundError(detail::system_message("open", path, error_number, __FILE__, __LINE__), error_number);
    }
    struct stat info {};
    if (::fstat(fd_, &info) == 0 && S_ISDIR(info.st_mode)) {  // open() takes a directory, its reads fail
      ::close(fd_);
      throw FileNotFoundError(detail::system_message("open", path, EISDIR, __FILE__, __LINE__), EISDIR);
    }
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  std::uint64_t size() const {
    struct stat info {};
    if (::fstat(fd_, &info) != 0) HEADRACE_THROW_SYSTEM("fstat", path_);
    return static_cast<std::uint64_t>(info.st_size);
  }

  // Whether a writer holds the file's lock now (a publishing writer, docs/format.md 6.1).
  [[nodiscard]] bool written_now() const {
    if (::flock(fd_, LOCK_SH | LOCK_NB) == 0) {
      ::flock(fd_, LOCK_UN);
      return false;
    }
    return errno == EWOULDBLOCK;
  }

  // Reads exactly bytes.size() bytes at offset (the caller checked the file is long enough).
  void read_exact(std::span<std::byte> bytes, std::uint64_t offset) const {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t got = ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) HEADRACE_THROW_SYSTEM("pread", path_);
      HEADRACE_EXPECT_DATA(got > 0, TruncatedFileError, path_, offset + done,
                           std::to_string(bytes.size() - done) + " more bytes", "end of file");
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  const std::string& path_;
  int fd_ = -1;
};

// The superblock, then the index it names, then both checked (parse).
Container read_whole(const std::string& path, const File& file) {
  const std::uint64_t size = file.size();
  HEADRACE_EXPECT_DATA(size >= sizeof(layout::Superblock), TruncatedFileError, path, 0,
                       "a superblock of at least " + std::to_string(sizeof(layout::Superblock)) + " bytes",
                       "a file of " + std::to_string(size) + " bytes");
  std::vector<std::byte> superblock(sizeof(layout::Superblock));
  file.read_exact(superblock, 0);
  // Validate the superblock before trusting index_offset/index_size to size a read.
  const auto block = record_at<layout::Superblock>(superblock, 0);
  HEADRACE_EXPECT_DATA(std::memcmp(block.magic, layout::superblock_magic, 8) == 0, BadMagicError, path, 0,
                       "magic 'HEADRACE' (a headrace container)", "other bytes");
  const bool index_inside = block.index_offset <= size && block.index_size <= size - block.index_offset &&
                            block.index_size <= (std::uint64_t{1} << 34);
  const bool growing = (block.flags & layout::superblock_flag_growing) != 0;
  std::vector<std::byte> index;
  if (index_inside && block.version_major == layout::version_major && (growing ? block.file_size <= size : block.file_size == size)) {
    index.resize(block.index_size);
    file.read_exact(index, block.index_offset);
  }
  // parse() reports every failure above precisely; an unread index is empty and fails its checks there.
  return Container::parse(path, superblock, index, size);
}

}  // namespace

Container Container::open(const std::string& path) {
  File file(path);
  // A publishing writer rewrites the superblock and reuses an index region two publications old (docs/format.md
  // 6.1): a reader that meets a checksum failing while that writer lives reads again, for up to a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (true) {
    try {
      return read_whole(path, file);
    } catch (const CorruptIndexError&) {
      if (std::chrono::steady_clock::now() > deadline || !file.written_now()) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

Container Container::parse(const std::string& path, std::span<const std::byte> superblock_bytes,
                           std::span<const std::byte> index, std::uint64_t file_size) {
  HEADRACE_EXPECT_DATA(superblock_bytes.size() >= sizeof(layout::Superblock), TruncatedFileError, path, 0,
                       "a superblock of 128 bytes", std::to_string(superblock_bytes.size()) + " bytes");
  const auto block = record_at<layout::Superblock>(superblock_bytes, 0);
  HEADRACE_EXPECT_DATA(std::memcmp(block.magic, layout::superblock_magic, 8) == 0, BadMagicError, path, 0,
                       "magic 'HEADRACE' (a headrace container)", "other bytes");
  HEADRACE_EXPECT_DATA(block.version_major == layout::version_major, UnsupportedVersionError, path, 8,
                       "format version 1.x", "version " + std::to_string(block.version_major) + "." +
                                                 std::to_string(block.version_minor));
  const std::uint64_t superblock_sum =
      xxh3_64(superblock_bytes.first(layout::Superblock::checked_bytes));
  HEADRACE_EXPECT_DATA(superblock_sum == block.superblock_checksum, CorruptIndexError, path, 120,
                       "superblock checksum " + hex(block.superblock_checksum), hex(superblock_sum));
  HEADRACE_EXPECT_DATA((block.flags & ~layout::superblock_flag_growing) == 0, UnsupportedVersionError, path, 12,
                       "superblock flags 0 or 1 (growing: a series still being written, format 1.4)", hex(block.flags));
  const bool growing = (block.flags & layout::superblock_flag_growing) != 0;
  HEADRACE_EXPECT_DATA(block.alignment == alignment_bytes, CorruptIndexError, path, 48, "alignment 4096",
                       std::to_string(block.alignment));
  HEADRACE_EXPECT_DATA(file_size >= block.file_size, TruncatedFileError, path, file_size,
                       "a file of " + std::to_string(block.file_size) + " bytes",
                       std::to_string(file_size) + " bytes");
  // A growing file's next frames lie past what its superblock publishes (docs/format.md 6.1).
  HEADRACE_EXPECT_DATA(growing || file_size == block.file_size, CorruptIndexError, path, block.file_size,
                       "end of file", std::to_string(file_size - block.file_size) + " more bytes");
  HEADRACE_EXPECT_DATA(block.index_offset >= layout::superblock_bytes && block.index_offset % alignment_bytes == 0 &&
                           block.index_offset <= block.file_size && block.index_size <= block.file_size - block.index_offset,
                       CorruptIndexError, path, 16, "an aligned index inside the file",
                       "index at " + std::to_string(block.index_offset) + " of " +
                           std::to_string(block.index_size) + " bytes");
  HEADRACE_EXPECT_DATA(index.size() == block.index_size, TruncatedFileError, path, block.index_offset,
                       "an index of " + std::to_string(block.index_size) + " bytes",
                       std::to_string(index.size()) + " bytes");
  const std::uint64_t index_sum = xxh3_64(index);
  HEADRACE_EXPECT_DATA(index_sum == block.index_checksum, CorruptIndexError, path, block.index_offset,
                       "index checksum " + hex(block.index_checksum), hex(index_sum));

  Container c;
  c.path_ = path;
  c.file_size_ = block.file_size;
  c.growing_ = growing;
  c.index_offset_ = block.index_offset;
  c.version_minor_ = block.version_minor;
  const std::uint64_t base = block.index_offset;  // file offset of index byte 0, for messages
  const CheckedSize checked{path, base};

  HEADRACE_EXPECT_DATA(index.size() >= sizeof(layout::IndexHeader), CorruptIndexError, path, base,
                       "an index header of 64 bytes", std::to_string(index.size()) + " bytes");
  const auto header = record_at<layout::IndexHeader>(index, 0);
  HEADRACE_EXPECT_DATA(std::memcmp(header.magic, layout::index_magic, 8) == 0, CorruptIndexError, path, base,
                       "index magic 'HRCINDEX'", "other bytes");
  HEADRACE_EXPECT_DATA(header.field_count >= 1, EmptyFieldError, path, base + 8, "at least one field", "0 fields");

  const std::uint64_t fields_at = sizeof(layout::IndexHeader);
  const std::uint64_t frames_at = checked.add(fields_at, checked.mul(header.field_count, sizeof(layout::FieldRecord)));
  const std::uint64_t frame_fields_at = checked.add(frames_at, checked.mul(header.frame_count, sizeof(layout::FrameRecord)));
  const std::uint64_t frame_field_count = checked.mul(header.frame_count, header.field_count);
  const std::uint64_t chunks_at = checked.add(frame_fields_at, checked.mul(frame_field_count, sizeof(layout::FrameFieldRecord)));
  const std::uint64_t attributes_at = checked.add(chunks_at, checked.mul(header.chunk_count, sizeof(layout::ChunkRecord)));
  const std::uint64_t ranges_at = checked.add(attributes_at, checked.mul(header.attribute_count, sizeof(layout::AttributeRecord)));
  const std::uint64_t heap_at = checked.add(ranges_at, checked.mul(header.range_value_count, sizeof(double)));
  const std::uint64_t expected_size = checked.add(heap_at, header.heap_size);
  HEADRACE_EXPECT_DATA(expected_size == index.size(), CorruptIndexError, path, base,
                       "an index of " + std::to_string(expected_size) + " bytes from its counts",
                       std::to_string(index.size()) + " bytes");

  const auto heap = index.subspan(heap_at, header.heap_size);
  auto heap_string = [&](std::uint64_t record_at, std::uint32_t offset, std::uint32_t length, const char* what) {
    HEADRACE_EXPECT_DATA(length >= 1 && length <= layout::max_name_bytes &&
                             std::uint64_t{offset} + length <= heap.size(),
                         CorruptIndexError, path, base + record_at,
                         std::string(what) + " of 1..255 bytes inside the heap",
                         "offset " + std::to_string(offset) + " length " + std::to_string(length));
    return std::string(reinterpret_cast<const char*>(heap.data()) + offset, length);
  };

  // 1.3: the chain table, in the heap. Earlier versions left these header bytes zero.
  const bool chains_allowed = block.version_minor >= layout::version_minor_chains;
  HEADRACE_EXPECT_DATA(chains_allowed || (header.chain_count == 0 && header.chains_offset == 0), CorruptIndexError, path,
                       base + 28, "no chain table (chains need format 1.3, the file says 1." + std::to_string(block.version_minor) + ")",
                       std::to_string(header.chain_count) + " chains");
  HEADRACE_EXPECT_DATA(header.chains_offset <= heap.size() &&
                           std::uint64_t{header.chain_count} * sizeof(layout::ChainRecord) <= heap.size() - header.chains_offset,
                       CorruptIndexError, path, base + 48, "a chain table inside the heap",
                       std::to_string(header.chain_count) + " chains at heap offset " + std::to_string(header.chains_offset));
  for (std::uint32_t i = 0; i < header.chain_count; ++i) {
    const std::uint64_t at = heap_at + header.chains_offset + std::uint64_t{i} * sizeof(layout::ChainRecord);
    const auto record = record_at<layout::ChainRecord>(index, at);
    const std::string which = "chain " + std::to_string(i);
    HEADRACE_EXPECT_DATA(record.spec_length >= 1 && record.spec_length <= layout::max_chain_spec_bytes &&
                             std::uint64_t{record.spec_offset} + record.spec_length <= heap.size(),
                         CorruptIndexError, path, base + at, which + " text of 1..4095 bytes inside the heap",
                         "offset " + std::to_string(record.spec_offset) + " length " + std::to_string(record.spec_length));
    HEADRACE_EXPECT_DATA((record.flags & ~layout::chain_flag_lossy) == 0, CorruptIndexError, path, base + at + 8,
                         which + " flags 0 or 1 (lossy)", std::to_string(record.flags));
    const bool lossy = (record.flags & layout::chain_flag_lossy) != 0;
    HEADRACE_EXPECT_DATA(lossy ? std::isfinite(record.error_bound) && record.error_bound > 0 : std::isnan(record.error_bound),
                         CorruptIndexError, path, base + at + 16,
                         which + (lossy ? " error bound > 0 (lossy)" : " error bound NaN (lossless)"),
                         std::to_string(record.error_bound));
    ChainInfo chain;
    chain.spec = std::make_shared<const std::string>(reinterpret_cast<const char*>(heap.data()) + record.spec_offset,
                                                     record.spec_length);
    if (lossy) chain.error_bound = record.error_bound;
    c.chains_.push_back(std::move(chain));
  }

  std::set<std::string> names;
  for (std::uint32_t i = 0; i < header.field_count; ++i) {
    const std::uint64_t at = fields_at + std::uint64_t{i} * sizeof(layout::FieldRecord);
    const auto record = record_at<layout::FieldRecord>(index, at);
    FieldInfo field;
    field.name = heap_string(at, record.name_offset, record.name_length, "a field name");
    HEADRACE_EXPECT_DATA(names.insert(field.name).second, CorruptIndexError, path, base + at, "unique field names",
                         "'" + field.name + "' twice");
    HEADRACE_EXPECT_DATA(is_valid_dtype_code(record.dtype), CorruptIndexError, path, base + at + 8,
                         "a dtype code 1..10", std::to_string(record.dtype));
    HEADRACE_EXPECT_DATA(record.components >= 1 && record.components <= 65536, EmptyFieldError, path, base + at + 12,
                         "field '" + field.name + "' with 1..65536 components", std::to_string(record.components));
    field.dtype = static_cast<DType>(record.dtype);
    field.components = record.components;
    c.fields_.push_back(std::move(field));
  }

  for (std::uint32_t i = 0; i < header.frame_count; ++i) {
    const auto record = record_at<layout::FrameRecord>(index, frames_at + std::uint64_t{i} * sizeof(layout::FrameRecord));
    FrameInfo frame;
    frame.time = record.time;
    for (int axis = 0; axis < 3; ++axis) {
      frame.bbox.min[axis] = record.bbox_min[axis];
      frame.bbox.max[axis] = record.bbox_max[axis];
    }
    c.frames_.push_back(frame);
  }

  c.ranges_.resize(header.range_value_count);
  if (!c.ranges_.empty()) std::memcpy(c.ranges_.data(), index.data() + ranges_at, c.ranges_.size() * sizeof(double));

  c.chunks_.resize(header.chunk_count);
  std::vector<bool> chunk_claimed(header.chunk_count, false);
  for (std::uint32_t t = 0; t < header.frame_count; ++t) {
    for (std::uint32_t f = 0; f < header.field_count; ++f) {
      const std::uint64_t at = frame_fields_at + (std::uint64_t{t} * header.field_count + f) * sizeof(layout::FrameFieldRecord);
      const auto record = record_at<layout::FrameFieldRecord>(index, at);
      const FieldInfo& field = c.fields_[f];
      const std::string where = "frame " + std::to_string(t) + " field '" + field.name + "'";
      // 1.0 and 1.1 readers refuse an empty frame-field: a file holding one says 1.2.
      HEADRACE_EXPECT_DATA(record.element_count >= 1 || block.version_minor >= layout::version_minor_empty_frames,
                           EmptyFieldError, path, base + at,
                           where + " with at least one element (empty frames need format 1.2, the file says 1." +
                               std::to_string(block.version_minor) + ")",
                           "0 elements");
      HEADRACE_EXPECT_DATA((record.chunk_count >= 1) == (record.element_count >= 1), CorruptIndexError, path, base + at + 16,
                           where + ": chunks exactly when it holds elements",
                           std::to_string(record.chunk_count) + " chunks for " + std::to_string(record.element_count) +
                               " elements");
      HEADRACE_EXPECT_DATA(record.first_chunk <= header.chunk_count &&
                               record.chunk_count <= header.chunk_count - record.first_chunk,
                           CorruptIndexError, path, base + at + 8, where + ": chunks inside the chunk table",
                           "chunks " + std::to_string(record.first_chunk) + "+" + std::to_string(record.chunk_count) +
                               " of " + std::to_string(header.chunk_count));
      std::uint64_t next_element = 0;
      for (std::uint64_t k = record.first_chunk; k < record.first_chunk + record.chunk_count; ++k) {
        const std::uint64_t chunk_at = chunks_at + k * sizeof(layout::ChunkRecord);
        const auto raw = record_at<layout::ChunkRecord>(index, chunk_at);
        const std::string chunk_name = where + " chunk " + std::to_string(k);
        HEADRACE_EXPECT_DATA(!chunk_claimed[k], CorruptIndexError, path, base + chunk_at,
                             chunk_name + " owned by one frame-field", "a chunk shared");
        chunk_claimed[k] = true;
        // Before the index; in a growing file (1.4) anywhere it publishes, but over the index (docs/format.md 6.1).
        const std::uint64_t data_end = growing ? block.file_size : block.index_offset;
        const bool clear_of_index = !growing || raw.offset >= block.index_offset + block.index_size ||
                                    raw.stored_size <= block.index_offset - std::min(raw.offset, block.index_offset);
        HEADRACE_EXPECT_DATA(raw.offset % alignment_bytes == 0 && raw.offset >= layout::superblock_bytes &&
                                 raw.stored_size >= 1 && raw.offset <= data_end && raw.stored_size <= data_end - raw.offset &&
                                 clear_of_index,
                             ChunkOutOfBoundsError, path, base + chunk_at,
                             chunk_name + " aligned inside the data region [4096, " + std::to_string(data_end) + ")" +
                                 (growing ? " clear of the index" : ""),
                             "offset " + std::to_string(raw.offset) + " size " + std::to_string(raw.stored_size));
        // 1.0 reserved code 3 (gdeflate), 1.0 to 1.2 code 4 (chain).
        const bool gdeflate_allowed = block.version_minor >= layout::version_minor_gdeflate;
        const CodecId last = chains_allowed ? CodecId::chain : gdeflate_allowed ? CodecId::gdeflate : CodecId::zstd;
        const std::string minor = "the file says 1." + std::to_string(block.version_minor);
        HEADRACE_EXPECT_DATA(raw.codec <= static_cast<std::uint8_t>(last), CorruptIndexError, path, base + chunk_at + 56,
                             chunk_name + (chains_allowed ? " codec none|lz4|zstd|gdeflate|chain"
                                           : gdeflate_allowed ? " codec none|lz4|zstd|gdeflate" : " codec none|lz4|zstd"),
                             raw.codec == static_cast<std::uint8_t>(CodecId::gdeflate) ? "gdeflate, which needs format 1.1 (" + minor + ")"
                             : raw.codec == static_cast<std::uint8_t>(CodecId::chain)  ? "chain, which needs format 1.3 (" + minor + ")"
                                                                                       : "code " + std::to_string(raw.codec));
        const bool chained = raw.codec == static_cast<std::uint8_t>(CodecId::chain);
        HEADRACE_EXPECT_DATA(chained ? raw.chain < header.chain_count : raw.chain == 0, CorruptIndexError, path,
                             base + chunk_at + 60,
                             chunk_name + (chained ? " chain id below " + std::to_string(header.chain_count) : " chain id 0 (no chain)"),
                             std::to_string(raw.chain));
        HEADRACE_EXPECT_DATA(raw.checksum_kind == static_cast<std::uint8_t>(ChecksumKind::xxh3_64), CorruptIndexError,
                             path, base + chunk_at + 57, chunk_name + " checksum kind 1 (xxh3-64)",
                             std::to_string(raw.checksum_kind));
        HEADRACE_EXPECT_DATA(raw.first_element == next_element && raw.element_count >= 1 &&
                                 raw.element_count <= record.element_count - next_element,
                             CorruptIndexError, path, base + chunk_at + 24,
                             chunk_name + " elements from " + std::to_string(next_element),
                             "first " + std::to_string(raw.first_element) + " count " + std::to_string(raw.element_count));
        next_element += raw.element_count;
        const std::uint64_t raw_size = checked.mul(raw.element_count, field.element_bytes());
        HEADRACE_EXPECT_DATA(raw.raw_size == raw_size, CorruptIndexError, path, base + chunk_at + 16,
                             chunk_name + " raw size " + std::to_string(raw_size), std::to_string(raw.raw_size));
        HEADRACE_EXPECT_DATA(raw.codec != 0 || raw.stored_size == raw.raw_size, CorruptIndexError, path,
                             base + chunk_at + 8, chunk_name + " stored size = raw size (codec none)",
                             std::to_string(raw.stored_size));
        HEADRACE_EXPECT_DATA(raw.range_index <= header.range_value_count &&
                                 2ull * field.components <= header.range_value_count - raw.range_index,
                             CorruptIndexError, path, base + chunk_at + 48, chunk_name + " value range inside the ranges",
                             "range index " + std::to_string(raw.range_index));
        ChunkInfo& chunk = c.chunks_[k];
        chunk.offset = raw.offset;
        chunk.stored_size = raw.stored_size;
        chunk.raw_size = raw.raw_size;
        chunk.first_element = raw.first_element;
        chunk.element_count = raw.element_count;
        chunk.checksum = raw.checksum;
        chunk.range_index = raw.range_index;
        chunk.codec = static_cast<CodecId>(raw.codec);
        chunk.checksum_kind = static_cast<ChecksumKind>(raw.checksum_kind);
        chunk.frame = t;
        chunk.field = f;
        if (chained) {
          chunk.chain = raw.chain;
          chunk.chain_spec = c.chains_[raw.chain].spec;
        }
      }
      HEADRACE_EXPECT_DATA(next_element == record.element_count, CorruptIndexError, path, base + at,
                           where + ": chunks holding " + std::to_string(record.element_count) + " elements",
                           std::to_string(next_element));
      c.frame_fields_.push_back({record.element_count, record.first_chunk, record.chunk_count});
    }
  }
  for (std::uint64_t k = 0; k < header.chunk_count; ++k) {
    HEADRACE_EXPECT_DATA(chunk_claimed[k], CorruptIndexError, path, base + chunks_at + k * sizeof(layout::ChunkRecord),
                         "every chunk owned by a frame-field", "chunk " + std::to_string(k) + " unowned");
  }

  for (std::uint32_t i = 0; i < header.attribute_count; ++i) {
    const std::uint64_t at = attributes_at + std::uint64_t{i} * sizeof(layout::AttributeRecord);
    const auto record = record_at<layout::AttributeRecord>(index, at);
    std::string name = heap_string(at, record.name_offset, record.name_length, "an attribute name");
    const auto kind = static_cast<layout::AttributeKind>(record.kind);
    const std::uint64_t value_bytes = kind == layout::AttributeKind::string ? record.count : std::uint64_t{record.count} * 8;
    HEADRACE_EXPECT_DATA(record.kind >= 1 && record.kind <= 3, CorruptIndexError, path, base + at + 8,
                         "attribute kind 1..3", std::to_string(record.kind));
    HEADRACE_EXPECT_DATA(record.value_offset <= heap.size() && value_bytes <= heap.size() - record.value_offset,
                         CorruptIndexError, path, base + at + 16, "attribute '" + name + "' value inside the heap",
                         "offset " + std::to_string(record.value_offset));
    const auto* values = heap.data() + record.value_offset;
    AttributeValue value;
    if (kind == layout::AttributeKind::int64) {
      std::vector<std::int64_t> numbers(record.count);
      if (value_bytes != 0) std::memcpy(numbers.data(), values, value_bytes);
      value = std::move(numbers);
    } else if (kind == layout::AttributeKind::float64) {
      std::vector<double> numbers(record.count);
      if (value_bytes != 0) std::memcpy(numbers.data(), values, value_bytes);
      value = std::move(numbers);
    } else {
      value = std::string(reinterpret_cast<const char*>(values), record.count);
    }
    HEADRACE_EXPECT_DATA(c.attributes_.emplace(name, std::move(value)).second, CorruptIndexError, path, base + at,
                         "unique attribute names", "'" + name + "' twice");
  }
  return c;
}

std::uint32_t Container::field_index(const std::string& name) const {
  std::string known;
  for (std::uint32_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return i;
    known += (known.empty() ? "" : ", ") + fields_[i].name;
  }
  throw UnknownNameError(path_ + ": no field '" + name + "' (fields: " + known + ")");
}

const FrameFieldInfo& Container::frame_field(std::uint32_t frame, std::uint32_t field) const {
  HEADRACE_EXPECT(frame < frames_.size(), UsageError,
                  path_ + ": frame " + std::to_string(frame) + " out of range (" + std::to_string(frames_.size()) + " frames)");
  HEADRACE_EXPECT(field < fields_.size(), UsageError,
                  path_ + ": field " + std::to_string(field) + " out of range (" + std::to_string(fields_.size()) + " fields)");
  return frame_fields_[std::size_t{frame} * fields_.size() + field];
}

std::span<const ChunkInfo> Container::chunks_of(std::uint32_t frame, std::uint32_t field) const {
  const auto& info = frame_field(frame, field);
  return std::span<const ChunkInfo>(chunks_).subspan(info.first_chunk, info.chunk_count);
}

std::span<const double> Container::range_min(const ChunkInfo& chunk) const {
  return std::span<const double>(ranges_).subspan(chunk.range_index, fields_[chunk.field].components);
}

std::span<const double> Container::range_max(const ChunkInfo& chunk) const {
  const auto components = fields_[chunk.field].components;
  return std::span<const double>(ranges_).subspan(chunk.range_index + components, components);
}

std::uint64_t Container::stored_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const auto& chunk : chunks_) total += chunk.stored_size;
  return total;
}

std::uint64_t Container::raw_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const auto& chunk : chunks_) total += chunk.raw_size;
  return total;
}

void Container::verify_chunk(const ChunkInfo& chunk, std::span<const std::byte> stored) const {
  HEADRACE_EXPECT_DATA(stored.size() == chunk.stored_size, TruncatedFileError, path_, chunk.offset,
                       std::to_string(chunk.stored_size) + " stored bytes", std::to_string(stored.size()));
  const std::uint64_t sum = xxh3_64(stored);
  HEADRACE_EXPECT_DATA(sum == chunk.checksum, ChecksumMismatchError, path_, chunk.offset,
                       "frame " + std::to_string(chunk.frame) + " field '" + fields_[chunk.field].name +
                           "' chunk checksum " + hex(chunk.checksum),
                       hex(sum));
}

}  // namespace headrace::format
