#include "headrace/format/writer.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::format {
namespace {

template <typename T>
void range_of(std::uint32_t components, std::span<const std::byte> raw, std::span<double> minimum,
              std::span<double> maximum) {
  const std::size_t count = raw.size() / sizeof(T) / components;
  const auto* values = reinterpret_cast<const T*>(raw.data());
  for (std::uint32_t c = 0; c < components; ++c) {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    for (std::size_t e = 0; e < count; ++e) {
      const double v = static_cast<double>(values[e * components + c]);
      if (v < lo) lo = v;  // comparisons with NaN are false: NaNs are skipped
      if (v > hi) hi = v;
    }
    const bool any = lo <= hi;
    minimum[c] = any ? lo : std::numeric_limits<double>::quiet_NaN();
    maximum[c] = any ? hi : std::numeric_limits<double>::quiet_NaN();
  }
}

void write_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t put = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) HEADRACE_THROW_SYSTEM("pwrite", path);
    done += static_cast<std::size_t>(put);
  }
}

template <typename T>
void append_bytes(std::vector<std::byte>& out, const T& value) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

}  // namespace

void compute_range(DType dtype, std::uint32_t components, std::span<const std::byte> raw,
                   std::span<double> minimum, std::span<double> maximum) {
  switch (dtype) {
    case DType::uint8: return range_of<std::uint8_t>(components, raw, minimum, maximum);
    case DType::int8: return range_of<std::int8_t>(components, raw, minimum, maximum);
    case DType::uint16: return range_of<std::uint16_t>(components, raw, minimum, maximum);
    case DType::int16: return range_of<std::int16_t>(components, raw, minimum, maximum);
    case DType::uint32: return range_of<std::uint32_t>(components, raw, minimum, maximum);
    case DType::int32: return range_of<std::int32_t>(components, raw, minimum, maximum);
    case DType::uint64: return range_of<std::uint64_t>(components, raw, minimum, maximum);
    case DType::int64: return range_of<std::int64_t>(components, raw, minimum, maximum);
    case DType::float32: return range_of<float>(components, raw, minimum, maximum);
    case DType::float64: return range_of<double>(components, raw, minimum, maximum);
  }
}

ContainerWriter::ContainerWriter(std::string path, std::vector<FieldInfo> fields, WriterOptions options)
    : path_(std::move(path)), partial_path_(path_ + ".partial"), fields_(std::move(fields)), options_(std::move(options)) {
  HEADRACE_EXPECT(!fields_.empty(), EmptyFieldError, path_ + ": a container needs at least one field");
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const auto& field = fields_[i];
    HEADRACE_EXPECT(!field.name.empty() && field.name.size() <= layout::max_name_bytes, UsageError,
                    path_ + ": field names must have 1..255 bytes, got '" + field.name + "'");
    HEADRACE_EXPECT(field.components >= 1 && field.components <= 65536, EmptyFieldError,
                    path_ + ": field '" + field.name + "' needs 1..65536 components, got " + std::to_string(field.components));
    for (std::size_t j = 0; j < i; ++j)
      HEADRACE_EXPECT(fields_[j].name != field.name, UsageError, path_ + ": field '" + field.name + "' given twice");
  }
  HEADRACE_EXPECT(options_.chunk_size_bytes >= 1, UsageError, "chunk_size_bytes must be >= 1");
  HEADRACE_EXPECT(options_.codings.empty() || options_.codings.size() == fields_.size(), UsageError,
                  path_ + ": " + std::to_string(options_.codings.size()) + " field codings for " +
                      std::to_string(fields_.size()) + " fields");
  codings_.resize(fields_.size());
  chain_of_field_.assign(fields_.size(), 0);
  for (std::uint32_t i = 0; i < options_.codings.size(); ++i) set_coding(i, options_.codings[i]);
  fd_ = ::open(partial_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) HEADRACE_THROW_SYSTEM("open", partial_path_);
  // Held until closed, through the rename: readers tell a live publishing writer by it (docs/format.md 6.1).
  if (options_.publish && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw SystemError(detail::system_message("flock", partial_path_, error, __FILE__, __LINE__), error);
  }
  end_ = layout::superblock_bytes;
}

std::unique_ptr<ContainerWriter> ContainerWriter::append(const std::string& path, WriterOptions options) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) HEADRACE_THROW_SYSTEM("open", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    HEADRACE_EXPECT(error != EWOULDBLOCK, UsageError, path + ": another writer holds it (a publishing writer's lock)");
    throw SystemError(detail::system_message("flock", path, error, __FILE__, __LINE__), error);
  }
  try {
    const Container existing = Container::open(path);  // read with the lock held: no writer changes it now
    std::vector<std::byte> superblock(layout::superblock_bytes);
    if (::pread(fd, superblock.data(), superblock.size(), 0) != static_cast<ssize_t>(superblock.size()))
      HEADRACE_THROW_SYSTEM("pread", path);
    options.publish = true;
    return std::unique_ptr<ContainerWriter>(new ContainerWriter(existing, fd, std::move(superblock), std::move(options)));
  } catch (...) {
    ::close(fd);
    throw;
  }
}

ContainerWriter::ContainerWriter(const Container& existing, int fd, std::vector<std::byte> superblock, WriterOptions options)
    : path_(existing.path()), partial_path_(path_ + ".partial"), fields_(existing.fields()), options_(std::move(options)) {
  HEADRACE_EXPECT(options_.chunk_size_bytes >= 1, UsageError, "chunk_size_bytes must be >= 1");
  HEADRACE_EXPECT(options_.codings.empty() || options_.codings.size() == fields_.size(), UsageError,
                  path_ + ": " + std::to_string(options_.codings.size()) + " field codings for " +
                      std::to_string(fields_.size()) + " fields");
  frames_ = existing.frames();
  appended_frames_ = static_cast<std::uint32_t>(frames_.size());
  for (std::uint32_t f = 0; f < frames_.size(); ++f)
    for (std::uint32_t k = 0; k < fields_.size(); ++k) {
      const FrameFieldInfo& slot = existing.frame_field(f, k);
      frame_fields_.push_back({true, slot.element_count, slot.first_chunk, slot.chunk_count});
    }
  // The chain table as it is (chunks name their chain by its place in it), then the chunks and their ranges.
  for (const ChainInfo& chain : existing.chains())
    chains_.push_back(FieldCoding{CodecId::chain, *chain.spec, chain.error_bound, 0});
  for (const ChunkInfo& c : existing.chunks())
    chunks_.push_back({c.offset, c.stored_size, c.raw_size, c.first_element, c.element_count, c.checksum, c.range_index, c.codec,
                       c.chain});
  ranges_ = existing.ranges();
  for (const auto& [name, value] : existing.attributes()) attributes_.emplace_back(name, value);
  codings_.resize(fields_.size());
  chain_of_field_.assign(fields_.size(), 0);
  for (std::uint32_t i = 0; i < options_.codings.size(); ++i) set_coding(i, options_.codings[i]);
  fd_ = fd;
  end_ = existing.file_size();  // past every byte of the last publication (a killed writer's rest is overwritten)
  renamed_ = true;
  published_frames_ = static_cast<std::uint32_t>(frames_.size());
  last_superblock_ = std::move(superblock);
}

ContainerWriter::~ContainerWriter() noexcept { abort(); }

void ContainerWriter::set_coding(std::uint32_t field, FieldCoding coding) {
  HEADRACE_EXPECT(field < fields_.size(), UsageError, path_ + ": field " + std::to_string(field) + " out of range");
  const std::string which = path_ + ": field '" + fields_[field].name + "': ";
  for (std::size_t frame = appended_frames_; frame * fields_.size() < frame_fields_.size(); ++frame)
    HEADRACE_EXPECT(frame_fields_[frame * fields_.size() + field].chunk_count == 0, UsageError,
                    which + "its coding is set before its first chunk is written");
  HEADRACE_EXPECT(coding.codec == CodecId::none || options_.encoder, UsageError,
                  which + "codec " + to_string(coding.codec) + " needs an encoder");
  HEADRACE_EXPECT(coding.max_chunk_bytes == 0 || options_.chunk_size_bytes <= coding.max_chunk_bytes, UsageError,
                  which + (coding.chain.empty() ? std::string(to_string(coding.codec)) : coding.chain) +
                      " encodes chunks of at most " + std::to_string(coding.max_chunk_bytes) +
                      " raw bytes, chunk_size_bytes is " + std::to_string(options_.chunk_size_bytes));
  HEADRACE_EXPECT((coding.codec == CodecId::chain) == !coding.chain.empty() && coding.chain.size() <= layout::max_chain_spec_bytes &&
                      (!coding.error_bound || (std::isfinite(*coding.error_bound) && *coding.error_bound > 0)),
                  UsageError, which + "a chain's text (1..4095 bytes) goes with codec chain, and its error bound is > 0");
  codings_[field] = std::move(coding);
  if (codings_[field].codec != CodecId::chain) return;
  // The chain table holds each text once; a coding set again may leave an unused entry, which is harmless.
  std::size_t k = 0;
  while (k < chains_.size() && chains_[k].chain != codings_[field].chain) ++k;
  if (k == chains_.size()) chains_.push_back(codings_[field]);
  chain_of_field_[field] = static_cast<std::uint32_t>(k);
}

void ContainerWriter::abort() noexcept {
  if (fd_ < 0) return;
  if (renamed_) {
    // Published: the file ends at its last publication, finished (its index after its chunks, the growing flag
    // cleared), what was written past it given back. Where that fails it stays as published, growing.
    try {
      layout::Superblock last{};
      std::memcpy(&last, last_superblock_.data(), sizeof last);
      end_ = last.file_size;
      publish_frames(published_frames_, false);
    } catch (...) {  // noexcept: a full disk or a write refused leaves the last publication, readable
    }
    ::close(fd_);
    fd_ = -1;
    return;
  }
  ::close(fd_);
  fd_ = -1;
  ::unlink(partial_path_.c_str());
}

void ContainerWriter::set_attribute(const std::string& name, AttributeValue value) {
  HEADRACE_EXPECT(!name.empty() && name.size() <= layout::max_name_bytes, UsageError,
                  "attribute names must have 1..255 bytes, got '" + name + "'");
  const auto count = std::visit([](const auto& v) { return v.size(); }, value);
  HEADRACE_EXPECT(count <= std::numeric_limits<std::uint32_t>::max(), UsageError, "attribute '" + name + "' is too long");
  for (auto& [existing, stored] : attributes_) {
    if (existing == name) {
      stored = std::move(value);
      return;
    }
  }
  attributes_.emplace_back(name, std::move(value));
}

std::uint32_t ContainerWriter::add_frame(double time, std::optional<BoundingBox> bbox) {
  HEADRACE_EXPECT(fd_ >= 0, UsageError, path_ + ": writer is closed");
  if (options_.publish && whole_frames() > published_frames_) publish();  // the frames before it, as they are whole
  constexpr double unknown = std::numeric_limits<double>::quiet_NaN();
  FrameInfo frame{time, bbox.value_or(BoundingBox{{unknown, unknown, unknown}, {unknown, unknown, unknown}})};
  frames_.push_back(frame);
  frame_fields_.resize(frames_.size() * fields_.size());
  return static_cast<std::uint32_t>(frames_.size() - 1);
}

void ContainerWriter::write_at_end(std::span<const std::byte> bytes) {
  write_all(fd_, bytes, end_, renamed_ ? path_ : partial_path_);
  end_ = layout::align_up(end_ + bytes.size());  // the gap is a hole that reads as zeros
}

void ContainerWriter::write_field(std::uint32_t frame, std::uint32_t field, std::span<const std::byte> raw) {
  HEADRACE_EXPECT(fd_ >= 0, UsageError, path_ + ": writer is closed");
  HEADRACE_EXPECT(frame < frames_.size(), UsageError, path_ + ": frame " + std::to_string(frame) + " was not added");
  HEADRACE_EXPECT(field < fields_.size(), UsageError, path_ + ": field " + std::to_string(field) + " out of range");
  const FieldInfo& info = fields_[field];
  const std::string where = path_ + ": frame " + std::to_string(frame) + " field '" + info.name + "'";
  PendingFrameField& slot = frame_fields_[std::size_t{frame} * fields_.size() + field];
  const std::size_t slot_index = std::size_t{frame} * fields_.size() + field;
  HEADRACE_EXPECT(!slot.written || slot_index == open_slot_, UsageError,
                  where + " was already written and another field since: appends must be consecutive");
  HEADRACE_EXPECT(!options_.publish || whole_frames() >= frame, UsageError,
                  where + ": a publishing writer writes its frames in order, each whole before the next (frame " +
                      std::to_string(whole_frames()) + " is not)");
  const std::uint64_t element_bytes = info.element_bytes();
  HEADRACE_EXPECT(raw.size() % element_bytes == 0, UsageError,
                  where + ": " + std::to_string(raw.size()) + " bytes is not a whole number of " +
                      std::to_string(element_bytes) + "-byte elements");

  const std::uint64_t element_count = raw.size() / element_bytes;
  const std::uint64_t per_chunk = std::max<std::uint64_t>(1, options_.chunk_size_bytes / element_bytes);
  const std::uint64_t chunk_count = (element_count + per_chunk - 1) / per_chunk;
  const std::uint64_t first_element = slot.element_count;  // nonzero when appending
  if (!slot.written) slot = {true, 0, chunks_.size(), 0};
  open_slot_ = slot_index;
  slot.element_count += element_count;
  slot.chunk_count += static_cast<std::uint32_t>(chunk_count);

  const unsigned threads = options_.encode_threads ? options_.encode_threads : std::max(1u, std::thread::hardware_concurrency());
  // Encode a group of chunks in parallel, then append them in order; groups bound the memory held.
  const std::uint64_t group = std::uint64_t{threads} * 2;
  for (std::uint64_t first = 0; first < chunk_count; first += group) {
    const std::uint64_t count = std::min(group, chunk_count - first);
    std::vector<std::vector<std::byte>> encoded(count);
    std::vector<double> ranges(count * 2 * info.components);
    detail::parallel_for(count, threads, [&](std::uint64_t i) {
      const std::uint64_t begin = (first + i) * per_chunk;
      const std::uint64_t elements = std::min(per_chunk, element_count - begin);
      const auto chunk_raw = raw.subspan(begin * element_bytes, elements * element_bytes);
      std::span<double> range(ranges.data() + i * 2 * info.components, 2 * info.components);
      compute_range(info.dtype, info.components, chunk_raw, range.first(info.components), range.last(info.components));
      if (codings_[field].codec != CodecId::none) encoded[i] = options_.encoder(field, chunk_raw);
    });

    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t begin = (first + i) * per_chunk;
      const std::uint64_t elements = std::min(per_chunk, element_count - begin);
      const auto chunk_raw = raw.subspan(begin * element_bytes, elements * element_bytes);
      const CodecId codec = codings_[field].codec;
      const std::span<const std::byte> stored = codec == CodecId::none ? chunk_raw : std::span<const std::byte>(encoded[i]);
      PendingChunk chunk{end_, stored.size(), chunk_raw.size(), first_element + begin, elements, xxh3_64(stored),
                         ranges_.size(), codec, codec == CodecId::chain ? chain_of_field_[field] : 0};
      ranges_.insert(ranges_.end(), ranges.begin() + i * 2 * info.components, ranges.begin() + (i + 1) * 2 * info.components);
      write_at_end(stored);
      chunks_.push_back(chunk);
    }
  }
}

std::uint32_t ContainerWriter::whole_frames() const {
  std::uint32_t frame = published_frames_;
  const std::size_t fields = fields_.size();
  while (frame < frames_.size() &&
         std::all_of(frame_fields_.begin() + static_cast<std::ptrdiff_t>(frame * fields),
                     frame_fields_.begin() + static_cast<std::ptrdiff_t>((frame + 1) * fields), [](const auto& slot) { return slot.written; }))
    ++frame;
  return frame;
}

// Frames are written in order (a publishing writer's rule, any writer's habit): the chunks of the first
// frame_count frames come before any later frame's.
std::uint64_t ContainerWriter::chunks_of_frames(std::uint32_t frame_count) const {
  if (frame_count == frames_.size()) return chunks_.size();
  std::uint64_t chunk_count = 0;
  for (const auto& slot : std::span(frame_fields_).first(std::size_t{frame_count} * fields_.size()))
    if (slot.chunk_count > 0) chunk_count = std::max(chunk_count, slot.first_chunk + slot.chunk_count);
  return chunk_count;
}

std::vector<std::byte> ContainerWriter::build_index(std::uint32_t frame_count) const {
  const std::size_t slots = std::size_t{frame_count} * fields_.size();
  const std::uint64_t chunk_count = chunks_of_frames(frame_count);  // and their ranges, before any later chunk's
  const std::uint64_t range_count = chunk_count < chunks_.size() ? chunks_[chunk_count].range_index : ranges_.size();
  std::vector<std::byte> heap;
  auto heap_add = [&heap](const void* data, std::size_t size) {
    const auto at = static_cast<std::uint32_t>(heap.size());
    const auto* bytes = static_cast<const std::byte*>(data);
    heap.insert(heap.end(), bytes, bytes + size);
    return at;
  };

  std::vector<std::byte> out;
  layout::IndexHeader header{};
  std::memcpy(header.magic, layout::index_magic, 8);
  header.field_count = static_cast<std::uint32_t>(fields_.size());
  header.frame_count = frame_count;
  header.chunk_count = chunk_count;
  header.attribute_count = static_cast<std::uint32_t>(attributes_.size());
  header.range_value_count = range_count;

  std::vector<std::byte> body;
  for (const auto& field : fields_) {
    layout::FieldRecord record{};
    record.name_offset = heap_add(field.name.data(), field.name.size());
    record.name_length = static_cast<std::uint32_t>(field.name.size());
    record.dtype = static_cast<std::uint8_t>(field.dtype);
    record.components = field.components;
    append_bytes(body, record);
  }
  for (const auto& frame : std::span(frames_).first(frame_count)) {
    layout::FrameRecord record{};
    record.time = frame.time;
    for (int axis = 0; axis < 3; ++axis) {
      record.bbox_min[axis] = frame.bbox.min[axis];
      record.bbox_max[axis] = frame.bbox.max[axis];
    }
    append_bytes(body, record);
  }
  for (const auto& slot : std::span(frame_fields_).first(slots)) {
    layout::FrameFieldRecord record{};
    record.element_count = slot.element_count;
    record.first_chunk = slot.first_chunk;
    record.chunk_count = slot.chunk_count;
    append_bytes(body, record);
  }
  for (const auto& chunk : std::span(chunks_).first(chunk_count)) {
    layout::ChunkRecord record{};
    record.offset = chunk.offset;
    record.stored_size = chunk.stored_size;
    record.raw_size = chunk.raw_size;
    record.first_element = chunk.first_element;
    record.element_count = chunk.element_count;
    record.checksum = chunk.checksum;
    record.range_index = chunk.range_index;
    record.codec = static_cast<std::uint8_t>(chunk.codec);
    record.checksum_kind = static_cast<std::uint8_t>(ChecksumKind::xxh3_64);
    record.chain = chunk.chain;
    append_bytes(body, record);
  }
  // 1.3: the chain table, in the heap after the chains' texts.
  std::vector<layout::ChainRecord> chain_records;
  for (const FieldCoding& coding : chains_) {
    layout::ChainRecord record{};
    record.spec_offset = heap_add(coding.chain.data(), coding.chain.size());
    record.spec_length = static_cast<std::uint32_t>(coding.chain.size());
    record.flags = coding.error_bound ? layout::chain_flag_lossy : 0;
    record.error_bound = coding.error_bound.value_or(std::numeric_limits<double>::quiet_NaN());
    chain_records.push_back(record);
  }
  header.chain_count = static_cast<std::uint32_t>(chain_records.size());
  if (!chain_records.empty()) {
    header.chains_offset = heap.size();
    heap_add(chain_records.data(), chain_records.size() * sizeof(layout::ChainRecord));
  }
  for (const auto& [name, value] : attributes_) {
    layout::AttributeRecord record{};
    record.name_offset = heap_add(name.data(), name.size());
    record.name_length = static_cast<std::uint32_t>(name.size());
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          record.count = static_cast<std::uint32_t>(v.size());
          record.value_offset = heap_add(v.data(), v.size() * sizeof(typename V::value_type));
          if constexpr (std::is_same_v<V, std::string>) record.kind = static_cast<std::uint8_t>(layout::AttributeKind::string);
          else if constexpr (std::is_same_v<V, std::vector<double>>) record.kind = static_cast<std::uint8_t>(layout::AttributeKind::float64);
          else record.kind = static_cast<std::uint8_t>(layout::AttributeKind::int64);
        },
        value);
    append_bytes(body, record);
  }
  const auto* range_bytes = reinterpret_cast<const std::byte*>(ranges_.data());
  body.insert(body.end(), range_bytes, range_bytes + range_count * sizeof(double));
  header.heap_size = heap.size();
  append_bytes(out, header);
  out.insert(out.end(), body.begin(), body.end());
  out.insert(out.end(), heap.begin(), heap.end());
  return out;
}

std::uint16_t ContainerWriter::version_minor_of(std::uint32_t frame_count) const {
  const auto chunks = std::span(chunks_).first(chunks_of_frames(frame_count));
  const auto frame_fields = std::span(frame_fields_).first(std::size_t{frame_count} * fields_.size());
  const bool gdeflate = std::any_of(chunks.begin(), chunks.end(), [](const auto& c) { return c.codec == CodecId::gdeflate; });
  const bool empty_frames = std::any_of(frame_fields.begin(), frame_fields.end(), [](const auto& slot) { return slot.element_count == 0; });
  return !chains_.empty() ? layout::version_minor_chains  // a chained chunk's chain is in the table
         : empty_frames   ? layout::version_minor_empty_frames
         : gdeflate       ? layout::version_minor_gdeflate
                          : 0;
}

std::vector<std::byte> ContainerWriter::superblock(std::span<const std::byte> index, std::uint64_t index_offset,
                                                   std::uint64_t file_size, std::uint16_t version_minor, std::uint32_t flags) const {
  std::vector<std::byte> bytes(layout::superblock_bytes, std::byte{0});
  layout::Superblock block{};
  std::memcpy(block.magic, layout::superblock_magic, 8);
  block.version_major = layout::version_major;
  block.version_minor = version_minor;
  block.flags = flags;
  block.index_offset = index_offset;
  block.index_size = index.size();
  block.index_checksum = xxh3_64(index);
  block.file_size = file_size;
  block.alignment = layout::alignment_bytes;
  std::memcpy(bytes.data(), &block, sizeof block);
  block.superblock_checksum = xxh3_64(std::span<const std::byte>(bytes).first(layout::Superblock::checked_bytes));
  std::memcpy(bytes.data(), &block, sizeof block);
  return bytes;
}

void ContainerWriter::fsync_directory() const {
  const auto directory = std::filesystem::absolute(path_).parent_path();
  const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd >= 0) {
    ::fsync(directory_fd);
    ::close(directory_fd);
  }
}

void ContainerWriter::publish() {
  HEADRACE_EXPECT(fd_ >= 0, UsageError, path_ + ": writer is closed");
  HEADRACE_EXPECT(options_.publish, UsageError, path_ + ": this writer does not publish (WriterOptions::publish)");
  const std::uint32_t count = whole_frames();
  if (renamed_ && count == published_frames_) return;
  try {
    publish_frames(count, true);
  } catch (...) {
    abort();  // the file ends at the last publication
    throw;
  }
}

// Chunks, then the index in the region the last publication did not use, then the superblock, each made
// durable before the next (docs/format.md 6.1).
void ContainerWriter::publish_frames(std::uint32_t frame_count, bool growing) {
  const std::string& where = renamed_ ? path_ : partial_path_;
  const std::vector<std::byte> index = build_index(frame_count);
  std::uint64_t index_offset = end_;
  if (growing) {
    IndexRegion& region = regions_[next_region_];
    if (region.capacity < index.size()) {  // replaced at the end, with room to grow
      region.offset = end_;
      region.capacity = layout::align_up(2 * index.size());
      end_ += region.capacity;
    }
    index_offset = region.offset;
    write_all(fd_, index, index_offset, where);
    next_region_ ^= 1;
  } else {
    write_at_end(index);  // the last after every chunk, where a 1.3 reader looks for it
  }
  if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) HEADRACE_THROW_SYSTEM("ftruncate", where);
  if (::fdatasync(fd_) != 0) HEADRACE_THROW_SYSTEM("fdatasync", where);
  const std::uint16_t minor = growing ? layout::version_minor_growing : version_minor_of(frame_count);
  std::vector<std::byte> block = superblock(index, index_offset, end_, minor, growing ? layout::superblock_flag_growing : 0);
  write_all(fd_, block, 0, where);
  if (::fdatasync(fd_) != 0) HEADRACE_THROW_SYSTEM("fdatasync", where);
  last_superblock_ = std::move(block);
  published_frames_ = frame_count;
  if (!renamed_) {
    if (::rename(partial_path_.c_str(), path_.c_str()) != 0) HEADRACE_THROW_SYSTEM("rename", partial_path_);
    renamed_ = true;
    fsync_directory();
  }
}

void ContainerWriter::close() {
  HEADRACE_EXPECT(fd_ >= 0, UsageError, path_ + ": writer is already closed");
  try {
    for (std::size_t i = 0; i < frame_fields_.size(); ++i) {
      HEADRACE_EXPECT(frame_fields_[i].written, EmptyFieldError,
                      path_ + ": frame " + std::to_string(i / fields_.size()) + " field '" +
                          fields_[i % fields_.size()].name + "' was never written");
    }
    const auto frame_count = static_cast<std::uint32_t>(frames_.size());
    if (options_.publish) {
      publish_frames(frame_count, false);  // the last: a finished container, its growing flag cleared
      ::close(fd_);  // the lock goes with it
      fd_ = -1;
      return;
    }
    const std::vector<std::byte> index = build_index(frame_count);
    const std::uint64_t index_offset = end_;
    write_at_end(index);
    if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) HEADRACE_THROW_SYSTEM("ftruncate", partial_path_);
    write_all(fd_, superblock(index, index_offset, end_, version_minor_of(frame_count), 0), 0, partial_path_);
    if (::fsync(fd_) != 0) HEADRACE_THROW_SYSTEM("fsync", partial_path_);
    if (::rename(partial_path_.c_str(), path_.c_str()) != 0) HEADRACE_THROW_SYSTEM("rename", partial_path_);
    ::close(fd_);
    fd_ = -1;
    fsync_directory();  // the rename itself made durable
  } catch (...) {
    abort();
    throw;
  }
}

}  // namespace headrace::format
