// Writes a .hrc container crash-safely: data goes to "<path>.partial", which is fsynced and renamed
// over path only by close(); an error or a destructor without close() removes it. A publishing writer
// (WriterOptions::publish, format 1.4, docs/format.md 6.1) makes its frames visible in path as it goes
// instead: each publish() (and each add_frame) publishes the frames written whole, atomically; killed, it
// leaves them readable; failing or destroyed unclosed, it ends the file at its last publication.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/format/codec_id.hpp"
#include "headrace/format/container.hpp"

namespace headrace::format {

// How one field's chunks are stored (docs/format.md 5.5, 5.10).
struct FieldCoding {
  CodecId codec = CodecId::none;       // the chunk records' code
  std::string chain;                   // codec chain: the chain's canonical text, stored in the chain table
  std::optional<double> error_bound;   // a lossy chain's bound
  std::uint64_t max_chunk_bytes = 0;   // the largest raw chunk its encoder takes (0: any)
};

// Turns a field's raw chunk bytes into its stored bytes. Injected by the codec layer, which lies
// downstream of the format and so cannot be called from here directly.
using ChunkEncoder = std::function<std::vector<std::byte>(std::uint32_t field, std::span<const std::byte> raw)>;

struct WriterOptions {
  // Raw bytes per chunk (rounded down to whole elements, at least one element).
  std::uint64_t chunk_size_bytes = std::uint64_t{4} << 20;
  std::vector<FieldCoding> codings;  // one per field; empty: every field stored as it is (codec none)
  ChunkEncoder encoder;              // required when a field is compressed
  // Chunks encoded in parallel by this many threads (compression is the slow part of writing).
  unsigned encode_threads = 0;  // 0: hardware concurrency
  // Publish frames as they are written (format 1.4): readers, and followers, see each frame once it is whole.
  // Frames are then written in order, each whole before the next.
  bool publish = false;
};

class ContainerWriter {
 public:
  ContainerWriter(std::string path, std::vector<FieldInfo> fields, WriterOptions options);
  // Appends to the container at path (finished, or left by a killed publishing writer), publishing (format
  // 1.4): its frames stay as they are and readers keep seeing them, new ones follow. Throws UsageError where
  // another writer holds the file; what Container::open throws for a file it cannot read.
  [[nodiscard]] static std::unique_ptr<ContainerWriter> append(const std::string& path, WriterOptions options);
  ~ContainerWriter() noexcept;
  ContainerWriter(const ContainerWriter&) = delete;
  ContainerWriter& operator=(const ContainerWriter&) = delete;

  void set_attribute(const std::string& name, AttributeValue value);
  // Stores field `field` with `coding` from now on; only before its first chunk is written (a writer
  // that chooses a chain from the first data it sees). Throws UsageError afterwards.
  void set_coding(std::uint32_t field, FieldCoding coding);
  // Starts a frame; returns its index. A bbox of nullopt is stored as NaNs ("unknown").
  std::uint32_t add_frame(double time, std::optional<BoundingBox> bbox);
  // Writes elements of one field of one frame: raw bytes, a whole number of elements. Calls for the
  // same frame-field append, as long as no other frame-field was written in between (so a huge
  // field can be written in slices). No bytes at all make an empty frame-field (format 1.2: a frame
  // without particles). Throws UsageError for a wrong size or a non-consecutive append.
  void write_field(std::uint32_t frame, std::uint32_t field, std::span<const std::byte> raw);
  // Publishing writers: makes every frame written whole so far visible in path (the first publication
  // renames the partial file over it). Throws UsageError for a writer that does not publish.
  void publish();
  // Writes index and superblock, fsyncs, renames over path. Throws UsageError if a field of a
  // frame was never written.
  void close();
  // Removes the partial file, or a publishing writer's file ends at its last publication; idempotent.
  void abort() noexcept;
  // The frames readers of path see (publishing writers).
  [[nodiscard]] std::uint32_t published_frames() const noexcept { return published_frames_; }

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const std::vector<FieldInfo>& fields() const noexcept { return fields_; }

 private:
  struct PendingFrameField {
    bool written = false;
    std::uint64_t element_count = 0;
    std::uint64_t first_chunk = 0;
    std::uint32_t chunk_count = 0;
  };
  struct PendingChunk {
    std::uint64_t offset, stored_size, raw_size, first_element, element_count, checksum, range_index;
    CodecId codec;
    std::uint32_t chain;
  };

  // append()'s: the writer of an existing container, its file open and locked on `fd`.
  ContainerWriter(const Container& existing, int fd, std::vector<std::byte> superblock, WriterOptions options);

  struct IndexRegion {  // where a publishing writer writes its index, two in turn (docs/format.md 6.1)
    std::uint64_t offset = 0, capacity = 0;
  };

  void write_at_end(std::span<const std::byte> bytes);
  // How many chunks frames 0 .. frame_count - 1 hold (written first: they are chunks_'s first).
  std::uint64_t chunks_of_frames(std::uint32_t frame_count) const;
  // The index of frames 0 .. frame_count - 1 and their chunks.
  std::vector<std::byte> build_index(std::uint32_t frame_count) const;
  // The superblock of an index of `index` written at index_offset, the file ending at file_size.
  std::vector<std::byte> superblock(std::span<const std::byte> index, std::uint64_t index_offset, std::uint64_t file_size,
                                    std::uint16_t version_minor, std::uint32_t flags) const;
  // The lowest version_minor frames 0 .. frame_count - 1 need.
  std::uint16_t version_minor_of(std::uint32_t frame_count) const;
  // The leading frames whose every field is written.
  std::uint32_t whole_frames() const;
  // Publishes frames 0 .. frame_count - 1; `growing` false: the last publication (close).
  void publish_frames(std::uint32_t frame_count, bool growing);
  void fsync_directory() const;

  std::string path_;
  std::string partial_path_;
  std::vector<FieldInfo> fields_;
  WriterOptions options_;
  int fd_ = -1;
  std::uint64_t end_ = 0;  // next aligned write offset
  std::size_t open_slot_ = static_cast<std::size_t>(-1);  // the frame-field appends may extend
  std::vector<FrameInfo> frames_;
  std::vector<PendingFrameField> frame_fields_;
  std::vector<PendingChunk> chunks_;
  std::vector<double> ranges_;
  std::vector<std::pair<std::string, AttributeValue>> attributes_;
  std::vector<FieldCoding> codings_;     // per field
  std::vector<std::uint32_t> chain_of_field_;  // per field: its chain's index in chains_ (codec chain)
  std::vector<FieldCoding> chains_;            // the chain table, one per distinct chain text
  // Publishing writers.
  bool renamed_ = false;  // published once: the file is path now
  std::uint32_t appended_frames_ = 0;  // append(): the frames the file held, whose codings are as they are
  std::uint32_t published_frames_ = 0;
  IndexRegion regions_[2];
  int next_region_ = 0;
  std::vector<std::byte> last_superblock_;  // the last publication's, for abort() to end the file there
};

// Per component minimum and maximum (as double, NaNs skipped) of element_count interleaved elements.
void compute_range(DType dtype, std::uint32_t components, std::span<const std::byte> raw,
                   std::span<double> minimum, std::span<double> maximum);

}  // namespace headrace::format
