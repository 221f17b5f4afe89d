// Seed 000's streaming render loop (algorithms 1 and 2) on Linux. A frame's particles travel batch by
// batch through the engine's queue into a segmented buffer of `segments` batches; each batch is drawn
// once its fence has passed (draw after the fence) and its segment takes the next batch once that draw
// is done (fence after the draw). Loads run up to `segments` batches ahead of the draws; a load that
// finds its segment still being drawn waits, and is counted (the paper's figure 9). On a GPU the draws
// are kernels on the renderer's stream, which waits on each fence; on the CPU the reference renderer
// draws from host segments.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "headrace/format/container.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/workloads/particles/gpu_renderer.hpp"
#include "headrace/workloads/particles/reference_renderer.hpp"

namespace headrace::workloads::particles {

struct SegmentedRenderOptions {
  std::uint64_t batch_particles = std::uint64_t{1} << 20;  // most particles a batch holds (whole chunks)
  unsigned segments = 4;                                   // batches in flight
  // The frame is read whole into the segments (one per batch) before the clock starts, then drawn:
  // seed 000's static baseline (the frame resident in GPU memory, `vram`).
  bool preload = false;
  // false: every batch is loaded and its segment reused as usual, but nothing is drawn: the streaming
  // time of the frame without rendering, the other half of seed 000's overlap question.
  bool draw = true;
  // The frame the next call renders, in a series: its batches queue behind this frame's and load as
  // segments free up (at once into segments this frame does not use: the buffer then holds up to
  // `segments` for both frames, so a whole small frame loads during the one before, seed 003's double
  // buffering). This call returns once those in a segment have arrived: its time covers them. The next
  // call takes them if it asks for that frame with the same options; otherwise they are cancelled.
  std::optional<std::uint32_t> next_frame;
};

struct SegmentedRenderStats {
  // Wall, to the last pass done: from the call's start, or, where the call before loaded ahead for it
  // (loaded_ahead > 0), from that call's end (its loads ran on after it returned, so the time between
  // the calls is this frame's); preload: the draws alone.
  double seconds = 0;
  double draw_seconds = 0;  // the passes: GPU time by CUDA events, or CPU wall time
  std::vector<double> batch_draw_seconds;
  std::uint64_t batches = 0, particles = 0;
  std::uint64_t stored_bytes = 0;   // read from the file
  std::uint64_t segment_waits = 0;  // times a load had to wait for its segment's previous draw
  // The queue's copy stream busy with this frame's H2D copies (CUDA events; 0 on the host): set
  // against `seconds` streaming alone, it tells a slow copy from a pipeline that leaves gaps.
  double h2d_seconds = 0;
  std::uint64_t loaded_ahead = 0;  // of its batches, those the call before loaded (its next_frame)
  double between_calls_seconds = 0;  // of `seconds`, from the call before's end to this call (the caller's time)
};

// Consecutive chunks of (frame, field), grouped so that a batch holds at most batch_particles (but at
// least one chunk): a compressed chunk is decoded whole.
struct ParticleBatch {
  std::uint64_t first_chunk = 0, chunk_count = 0;  // into chunks_of(frame, field)
  std::uint64_t first_particle = 0, particles = 0;
};
[[nodiscard]] std::vector<ParticleBatch> particle_batches(const format::Container& container, std::uint32_t frame,
                                                          std::uint32_t field, std::uint64_t batch_particles);

// Seed 000's loop over one renderer on the engine's slot stream (engine/slot_stream.hpp): a segment is a
// slot, a batch a unit. The segmented buffer (and, on a GPU, the draw stream) and the slot stream are made
// once and kept from frame to frame, made anew when a frame needs larger or other segments: made per
// frame, every frame would pay page faults (host) or an allocation and a free (GPU) before its first
// byte, and the look-ahead into the next frame would end with each call.
class SegmentedRenderer {
 public:
  explicit SegmentedRenderer(ReferenceRenderer& renderer);  // host segments (queue device -1)
  explicit SegmentedRenderer(GpuRenderer& renderer);        // segments on the renderer's GPU
  SegmentedRenderer(const SegmentedRenderer&) = delete;
  SegmentedRenderer& operator=(const SegmentedRenderer&) = delete;
  ~SegmentedRenderer();

  // The renderer is cleared first. Throws UsageError for a field that is not float32 x 8 particles or
  // for options that cannot work, and Error naming the chunk for a batch that could not be read or
  // decoded (the frame stops there, and loads for a next frame are cancelled). The queue's destinations
  // must match the renderer: host (device -1) for the reference renderer, the renderer's GPU for the
  // GPU one.
  SegmentedRenderStats render(engine::Queue& queue, queue::FileId file, const format::Container& container,
                              std::uint32_t frame, std::uint32_t field, const SegmentedRenderOptions& options);

  struct Stream;  // the slot stream over the segments and what it was made for

 private:
  struct Target;
  std::unique_ptr<Target> target_;
  std::unique_ptr<Stream> stream_;  // after target_: destroyed first, so no read lands in freed segments
};

}  // namespace headrace::workloads::particles
