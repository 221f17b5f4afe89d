// Seed 003's animation loop with its streaming steps as switchable stages, so its figure 3 can be
// reproduced, then the steps it left as future work. Stages are cumulative, as in the paper:
//
//   baseline  read the frame (buffered, one thread) into pageable memory, flatten it on the CPU (a pass
//             through a per-cell index into the upload buffer), copy it to the GPU, wait, value ranges,
//             rebuild the region lists (CPU) and upload them, classify, render, wait (section 5.1)
//   double    the next frame is read on a second thread while this one is processed (5.2)
//   pinned    the upload buffer is page-locked; the copy is asynchronous, then waited for (5.3)
//   direct    reads bypass the page cache (O_DIRECT) (5.4)
//   flat      no flattening: the scalars are stored in brick order and read straight into the
//             page-locked buffers (5.5)
//   refit     the region lists are kept; only the classification is redone (5.6)
//   overlap   two GPU buffers: the copy of frame t+1 runs beside the rendering of frame t (5.7, figure 7)
//   all       past the paper: the engine streams frames into GPU slots (its read path: page cache or
//             O_DIRECT per range, GPU decompression of compressed chunks, several frames ahead); each
//             frame's value ranges and classification run on their own stream as soon as it lands,
//             overlapped with the rendering of the frame before; no device-wide wait
//
// On the CPU (device -1) the same loop runs with the CPU renderer: no copies, so pinned and overlap
// change nothing (PlayResult::notes says so) and all streams into host slots.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "headrace/detail/enum_names.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/format/container.hpp"
#include "headrace/workloads/volume/volume_renderer.hpp"

namespace headrace::workloads::volume {

enum class Stage : std::uint8_t { baseline, double_buffer, pinned, direct, flat, refit, overlap, all };
inline constexpr headrace::detail::EnumNames<Stage, 8> stage_names{{{Stage::baseline, "baseline"},
                                                                    {Stage::double_buffer, "double"},
                                                                    {Stage::pinned, "pinned"},
                                                                    {Stage::direct, "direct"},
                                                                    {Stage::flat, "flat"},
                                                                    {Stage::refit, "refit"},
                                                                    {Stage::overlap, "overlap"},
                                                                    {Stage::all, "all"}}};
[[nodiscard]] inline Stage parse_stage(const std::string& name) { return headrace::detail::parse_name(stage_names, name, "stage"); }
[[nodiscard]] constexpr const char* stage_name(Stage stage) noexcept { return headrace::detail::name_of(stage_names, stage); }

enum class SpanKind : std::uint8_t { io, flatten, decode, h2d, ranges, structure, render };
inline constexpr headrace::detail::EnumNames<SpanKind, 7> span_kind_names{{{SpanKind::io, "io"},
                                                                           {SpanKind::flatten, "flatten"},
                                                                           {SpanKind::decode, "decode"},
                                                                           {SpanKind::h2d, "h2d"},
                                                                           {SpanKind::ranges, "ranges"},
                                                                           {SpanKind::structure, "structure"},
                                                                           {SpanKind::render, "render"}}};
[[nodiscard]] constexpr const char* span_name(SpanKind kind) noexcept { return headrace::detail::name_of(span_kind_names, kind); }

struct Span {
  SpanKind kind = SpanKind::io;
  double start = 0, end = 0;  // seconds since the run started (host clock; GPU work by its CUDA events)
};

struct PlayedFrame {
  std::uint32_t frame = 0;
  double start = 0, end = 0;  // from the image before (or the run's start) to this frame's image done
  std::vector<Span> spans;
};

struct PlayOptions {
  Stage stage = Stage::all;
  std::vector<std::uint32_t> frames;  // the order shown: any frames, strides, jumps, repeats
  std::uint32_t field = 0;
  Camera camera;
  TransferFunction tf;
  RenderSettings settings;
  // Called with each image, in order (copied from the GPU: costs the copy); false stops the run.
  std::function<bool(std::uint32_t frame, std::vector<std::uint32_t>&& image)> on_image;
  std::uint32_t slots = 3;  // `all`: frames in GPU (or host) memory at once
};

struct PlayResult {
  std::vector<PlayedFrame> frames;
  double seconds = 0;      // the run: first read to last image
  std::uint64_t frame_bytes = 0;   // raw bytes of one frame of the field
  std::uint64_t stored_bytes = 0;  // bytes read from the file over the run
  std::string notes;       // what ran where: backends, the engine's read path, what a stage could not do here
};

// Plays the frames through renderer (GPU) with the stage's steps. queue: for `all` (its device must be
// the renderer's); other stages read the file themselves. A frame that fails to load stops the run with
// an Error naming it (no image is shown for it).
[[nodiscard]] PlayResult play(const format::Container& container, const VolumeTopology& topology, GpuVolumeRenderer& renderer,
                              engine::Queue* queue, const PlayOptions& options);
// The same on the CPU renderer (queue: host destinations, for `all`).
[[nodiscard]] PlayResult play(const format::Container& container, const VolumeTopology& topology, CpuVolumeRenderer& renderer,
                              engine::Queue* queue, const PlayOptions& options);

// Seconds per image when only rendering: frame `frame` read once and resident, its ranges and
// classification done, then `repeats` renders (GPU time by events, CPU wall time).
[[nodiscard]] double render_only_seconds(const format::Container& container, const VolumeTopology& topology,
                                         GpuVolumeRenderer& renderer, const PlayOptions& options, std::uint32_t frame,
                                         unsigned repeats);
[[nodiscard]] double render_only_seconds(const format::Container& container, const VolumeTopology& topology,
                                         CpuVolumeRenderer& renderer, const PlayOptions& options, std::uint32_t frame,
                                         unsigned repeats);

}  // namespace headrace::workloads::volume
