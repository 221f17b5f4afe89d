// workloads layer: the sphere glyph renderer of seed 000 (the particles workload): the CPU reference over a
// frame in memory, and the session kept across frames (particles/frame_session.hpp) as FrameRenderer.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <span>

#include "bindings.hpp"
#include "headrace/detail/enum_names.hpp"
#include "headrace/workloads/particles/depth_compositor.hpp"
#include "headrace/workloads/particles/frame_session.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace common = headrace::workloads::common;
namespace pt = headrace::workloads::particles;

namespace headrace::python {

void bind_particles(nb::module_& m) {
  m.def("render_particles",
        [](nb::ndarray<const float, nb::shape<-1, 8>, nb::c_contig, nb::device::cpu> particles, const CameraSpec& view,
           std::uint32_t background, std::uint64_t batch_particles, unsigned threads) {
          const pt::Camera camera = common::camera_of(view);
          const std::span<const pt::Particle> all(reinterpret_cast<const pt::Particle*>(particles.data()), particles.shape(0));
          std::vector<std::uint32_t> image;
          {
            nb::gil_scoped_release release;
            image = pt::render_reference(all, camera, background, batch_particles, threads);
          }
          return image_array(std::move(image), camera);
        },
        "particles"_a, "camera"_a, "background"_a, "batch_particles"_a, "threads"_a = 0u,
        "Sphere glyphs of (N, 8) float32 particles (x, y, z, radius, r, g, b, a) drawn by the CPU reference in batches: "
        "(height, width, 4) uint8 RGBA.");

  nb::class_<pt::FrameSession>(m, "FrameRenderer",
                               "A sphere renderer kept across frames: GPU `device`, or the CPU reference for -1.")
      .def("__init__",
           [](pt::FrameSession* self, const CameraSpec& view, std::uint32_t background, int device, unsigned threads) {
             new (self) pt::FrameSession(common::camera_of(view), background, device, threads);
           },
           "camera"_a, "background"_a, "device"_a, "threads"_a = 0u, nb::call_guard<nb::gil_scoped_release>())
      .def("render",
           [](pt::FrameSession& self, engine::Queue& q, queue::FileId file, const format::Container& container,
              std::uint32_t frame, std::uint32_t field, std::uint64_t batch_particles, unsigned segments, bool preload,
              bool draw, std::optional<std::uint32_t> next_frame) {
             pt::SegmentedRenderStats stats;
             {
               nb::gil_scoped_release release;
               stats = self.render(q, file, container, frame, field, {batch_particles, segments, preload, draw, next_frame});
             }
             nb::dict result;
             result["seconds"] = stats.seconds;
             result["draw_seconds"] = stats.draw_seconds;
             result["batch_draw_seconds"] = stats.batch_draw_seconds;
             result["batches"] = stats.batches;
             result["particles"] = stats.particles;
             result["stored_bytes"] = stats.stored_bytes;
             result["segment_waits"] = stats.segment_waits;
             result["h2d_seconds"] = stats.h2d_seconds;
             result["loaded_ahead"] = stats.loaded_ahead;
             result["between_calls_seconds"] = stats.between_calls_seconds;
             return result;
           },
           "queue"_a, "file"_a, "container"_a, "frame"_a, "field"_a, "batch_particles"_a, "segments"_a, "preload"_a,
           "draw"_a = true, "next_frame"_a = nb::none(),
           "Seed 000's streaming render loop over one frame (cleared first): its statistics. next_frame: the frame "
           "the next call renders, whose first batches are loaded while this frame is drawn and go on loading after it returns.")
      .def("clear", [](pt::FrameSession& self, std::uintptr_t stream) { self.clear(cuda_stream(stream)); }, "stream"_a = 0,
           nb::call_guard<nb::gil_scoped_release>(),
           "Back to the background (on a CUDA stream for a GPU renderer).")
      .def("draw_device",
           [](pt::FrameSession& self, std::uintptr_t particles, std::uint64_t count, std::uint32_t first_index, std::uintptr_t stream,
              std::uintptr_t scalars) { self.draw_device(particles, count, first_index, cuda_stream(stream), scalars); },
           "particles"_a, "count"_a, "first_index"_a, "stream"_a = 0, "scalars"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "Draws `count` particles already in GPU memory at address `particles` (GPU only), on a CUDA stream; "
           "scalars: the address of the frame's per-particle values when the look colours by a field.")
      .def("draw_host",
           [](pt::FrameSession& self, nb::ndarray<const float, nb::shape<-1, 8>, nb::c_contig, nb::device::cpu> particles,
              std::uint32_t first_index, std::optional<nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>> scalars) {
             const std::span<const pt::Particle> batch(reinterpret_cast<const pt::Particle*>(particles.data()), particles.shape(0));
             std::optional<std::span<const float>> values;
             if (scalars) values.emplace(scalars->data(), scalars->shape(0));
             nb::gil_scoped_release release;
             self.draw_host(batch, first_index, values);
           },
           "particles"_a, "first_index"_a = 0u, "scalars"_a = nb::none(),
           "Draws (N, 8) float32 particles in host memory with the CPU reference (CPU only); scalars: the frame's "
           "per-particle values when the look colours by a field.")
      .def("set_camera", [](pt::FrameSession& self, const CameraSpec& view) { self.set_camera(common::camera_of(view)); },
           "camera"_a, "Another camera from the next clear on; the image follows its size.")
      .def("set_look",
           [](pt::FrameSession& self, float radius_scale, std::int32_t colour_by, std::vector<float> table, float lo, float hi) {
             self.set_look({radius_scale, colour_by, std::move(table), lo, hi});
           },
           "radius_scale"_a = 1.0f, "colour_by"_a = pt::colour_stored, "table"_a = std::vector<float>{}, "lo"_a = 0.0f,
           "hi"_a = 1.0f,
           "Radii scaled, and the colour from the record (colour_by -1), from x, y, z or radius (0..3) or from a "
           "per-particle field (8) through a 256-entry RGBA table over lo..hi.")
      .def("keys",
           [](const pt::FrameSession& self, std::uintptr_t stream) {
             std::vector<std::uint64_t> keys;
             {
               nb::gil_scoped_release release;
               keys = self.keys(cuda_stream(stream));
             }
             const auto& camera = self.camera();
             return owned_array(std::move(keys), {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width)});
           },
           "stream"_a = 0,
           "Each pixel's depth key (height, width) uint64: the ray depth's bits << 32 | the particle's number in its "
           "frame, all ones where nothing was drawn; once `stream` has finished. Sort-last compositing keeps the least.")
      .def("image",
           [](const pt::FrameSession& self, std::uintptr_t stream) {
             workloads::common::FramePool::Buffer image;
             {
               nb::gil_scoped_release release;  // the image writer's threads go on while the frame comes home
               image = self.image_pooled(cuda_stream(stream));
             }
             return image_array(std::move(image), self.camera());
           },
           "stream"_a = 0,
           "The image (height, width, 4) uint8 RGBA, once `stream` has finished: on a GPU, in memory the renderer "
           "takes back for a later image once the array is gone.")
      .def("reserve_images", &pt::FrameSession::reserve_images, "count"_a, nb::call_guard<nb::gil_scoped_release>(),
           "Makes the memory of `count` images ahead (a series' writers hold that many at once), its pages in place, so "
           "no frame's image faults its own in; nothing on the CPU.");

  nb::class_<pt::DepthCompositor>(m, "DepthCompositor",
                                  "Sort-last compositing of particle images by depth on the GPUs that drew them, over NCCL.")
      .def(nb::init<const gpu::Communicator&, std::int32_t, std::int32_t>(), "communicator"_a, "width"_a, "height"_a,
           nb::keep_alive<1, 2>(), nb::call_guard<nb::gil_scoped_release>())
      .def("composite",
           [](pt::DepthCompositor& self, const pt::FrameSession& renderer, const std::string& schedule, std::uintptr_t stream)
               -> std::optional<nb::ndarray<nb::numpy, std::uint8_t>> {
             const auto chosen = detail::parse_name(pt::composite_schedule_names, schedule, "compositing schedule");
             const pt::GpuRenderer& gpu = renderer.gpu_renderer();
             std::vector<std::uint32_t> image;
             {
               nb::gil_scoped_release release;  // collective: waits for every rank
               image = self.composite(gpu.keys_pointer(), gpu.image_pointer(), chosen, cuda_stream(stream));
             }
             if (image.empty()) return std::nullopt;
             return image_array(std::move(image), renderer.camera());
           },
           "renderer"_a, "schedule"_a = "direct-send", "stream"_a = 0,
           "This rank's image (the renderer's, drawn on `stream`) composited with every rank's: the image (height, width, 4) "
           "uint8 on rank 0, None elsewhere. schedule: direct-send or binary-swap (a power-of-two number of ranks).");

  m.def("particle_batches",
        [](const format::Container& container, std::uint32_t frame, std::uint32_t field, std::uint64_t batch_particles) {
          nb::list out;
          for (const auto& b : pt::particle_batches(container, frame, field, batch_particles))
            out.append(nb::make_tuple(b.first_chunk, b.chunk_count, b.first_particle, b.particles));
          return out;
        },
        "container"_a, "frame"_a, "field"_a, "batch_particles"_a,
        "The batches of seed 000's loop: (first chunk, chunks, first particle, particles), whole chunks each.");
}

}  // namespace headrace::python
