// workloads layer: streamline tracing of flow containers (seed 002) and the Hilbert layout converter.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <span>

#include "bindings.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/workloads/particles/camera.hpp"
#include "headrace/workloads/particles/glyph_look.hpp"
#include "headrace/workloads/particles/reference_renderer.hpp"
#include "headrace/workloads/particles/segmented_render.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/resident_tracer.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace sl = headrace::workloads::streamlines;
namespace pt = headrace::workloads::particles;

namespace headrace::python {
namespace {

template <typename T>
nb::ndarray<nb::numpy, T> owned_array(std::vector<T>&& values, std::initializer_list<std::size_t> shape) {
  auto* heap = new std::vector<T>(std::move(values));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.begin(), owner);
}

sl::Integrator parse_integrator(const std::string& name) {
  if (name == "rk4") return sl::Integrator::rk4;
  if (name == "rk45") return sl::Integrator::rk45;
  throw UsageError("integrator '" + name + "': expected rk4|rk45");
}

sl::Direction parse_direction(const std::string& name) {
  if (name == "forward") return sl::Direction::forward;
  if (name == "backward") return sl::Direction::backward;
  if (name == "both") return sl::Direction::both;
  throw UsageError("direction '" + name + "': expected forward|backward|both");
}

sl::DataManager parse_manager(const std::string& name) {
  if (name == "user") return sl::DataManager::user;
  if (name == "mmap") return sl::DataManager::mmap;
  if (name == "resident") return sl::DataManager::resident;
  throw UsageError("manager '" + name + "': expected user|mmap|resident");
}

sl::TraceOptions trace_options_of(const std::string& integrator, const std::string& direction, float step_size,
                                  std::uint32_t max_steps, float stagnant_speed, float tolerance, float min_step, float max_step) {
  sl::TraceOptions o;
  o.integrator = parse_integrator(integrator);
  o.direction = parse_direction(direction);
  o.step_size = step_size, o.max_steps = max_steps, o.stagnant_speed = stagnant_speed;
  o.tolerance = tolerance, o.min_step = min_step, o.max_step = max_step;
  return o;
}

// Points (N, 3), their integration times, the lines' offsets and "backward/forward" ends of each line.
void put_lines(nb::dict& result, sl::Polylines&& lines) {
  static_assert(sizeof(sl::Vec3) == 3 * sizeof(float));
  const std::size_t count = lines.points.size();
  std::vector<float> flat(3 * count);
  std::memcpy(flat.data(), lines.points.data(), flat.size() * sizeof(float));
  result["points"] = owned_array(std::move(flat), {count, 3});
  result["times"] = owned_array(std::move(lines.times), {count});
  const std::size_t offsets = lines.offsets.size();
  result["offsets"] = owned_array(std::move(lines.offsets), {offsets});
  nb::list ends;
  for (const auto& line : lines.lines)
    ends.append(std::string(sl::to_string(line.backward_end)) + "/" + sl::to_string(line.forward_end));
  result["ends"] = ends;
}

std::vector<sl::Vec3> seeds_of(const nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu>& seeds) {
  std::vector<sl::Vec3> points(seeds.shape(0));
  std::memcpy(points.data(), seeds.data(), points.size() * sizeof(sl::Vec3));
  return points;
}

// Records of trivially copyable structs as rows of bytes (what ranks send one another), and back.
template <typename T>
nb::ndarray<nb::numpy, std::uint8_t> record_bytes(std::span<const T> records) {
  std::vector<std::uint8_t> bytes(records.size_bytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), records.data(), bytes.size());
  return owned_array(std::move(bytes), {records.size(), sizeof(T)});
}

using RecordBytes = nb::ndarray<const std::uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <typename T>
std::vector<T> records_of(const RecordBytes& bytes, const char* what) {
  HEADRACE_EXPECT(bytes.shape(1) == sizeof(T) || bytes.shape(0) == 0, UsageError,
                  std::string(what) + " come as rows of " + std::to_string(sizeof(T)) + " bytes, got " + std::to_string(bytes.shape(1)));
  std::vector<T> out(bytes.shape(0));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

pt::Camera camera_of(const CameraSpec& v) {
  const pt::Vec3 target{v.target[0], v.target[1], v.target[2]};
  if (v.orbit) return pt::orbit(target, (*v.orbit)[0], (*v.orbit)[1], (*v.orbit)[2], v.fov_y_degrees, v.width, v.height);
  return pt::look_at({v.eye[0], v.eye[1], v.eye[2]}, target, {v.up[0], v.up[1], v.up[2]}, v.fov_y_degrees, v.width, v.height);
}

nb::ndarray<nb::numpy, std::uint8_t> image_array(std::vector<std::uint32_t>&& rgba, const pt::Camera& camera) {
  std::vector<std::uint8_t> bytes(rgba.size() * 4);
  std::memcpy(bytes.data(), rgba.data(), bytes.size());
  return owned_array(std::move(bytes), {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width), 4});
}

namespace {

// The GPU renderer or the CPU reference, kept across frames (the pipeline is set up once).
class FrameRenderer {
 public:
  FrameRenderer(const CameraSpec& view, std::uint32_t background, int device, unsigned threads) : camera_(camera_of(view)) {
    if (device >= 0) {
      gpu_.emplace(device, camera_, background);
      segmented_.emplace(*gpu_);
    } else {
      cpu_.emplace(camera_, background, threads);
      segmented_.emplace(*cpu_);
    }
  }
  pt::SegmentedRenderStats render(engine::Queue& q, queue::FileId file, const format::Container& container,
                                  std::uint32_t frame, std::uint32_t field, const pt::SegmentedRenderOptions& options) {
    return segmented_->render(q, file, container, frame, field, options);
  }
  // The peer's path (KvikIO into CuPy arrays) and the viewer's: the caller puts a frame or batch in
  // memory (GPU memory for a GPU renderer, host memory for the reference), we draw it.
  void clear(std::uintptr_t stream) {
    if (gpu_)
      gpu_->clear(reinterpret_cast<gpu::CUstream>(stream));
    else
      cpu_->clear();
  }
  void draw_device(std::uintptr_t particles, std::uint64_t count, std::uint32_t first_index, std::uintptr_t stream,
                   std::uintptr_t scalars) {
    if (!gpu_) throw UsageError("draw_device draws on a GPU; this renderer is the CPU reference (draw_host)");
    gpu_->draw(particles, count, first_index, reinterpret_cast<gpu::CUstream>(stream), scalars);
  }
  void draw_host(std::span<const pt::Particle> particles, std::uint32_t first_index, const float* scalars) {
    if (!cpu_) throw UsageError("draw_host draws with the CPU reference; this renderer is a GPU's (draw_device)");
    cpu_->draw(particles, first_index, scalars);
  }
  // From the next clear on (the segmented render loop clears first).
  void set_camera(const pt::Camera& camera) {
    if (gpu_)
      gpu_->set_camera(camera);
    else
      cpu_->set_camera(camera);
    camera_ = camera;
  }
  void set_look(const pt::GlyphLook& look) {
    if (gpu_)
      gpu_->set_look(look);
    else
      cpu_->set_look(look);
  }
  [[nodiscard]] std::vector<std::uint32_t> image(std::uintptr_t stream = 0) const {
    return gpu_ ? gpu_->image(reinterpret_cast<gpu::CUstream>(stream)) : cpu_->image();
  }
  [[nodiscard]] std::vector<std::uint64_t> keys(std::uintptr_t stream = 0) const {
    return gpu_ ? gpu_->keys(reinterpret_cast<gpu::CUstream>(stream)) : cpu_->keys();
  }
  [[nodiscard]] const pt::Camera& camera() const { return camera_; }

 private:
  pt::Camera camera_;
  std::optional<pt::GpuRenderer> gpu_;
  std::optional<pt::ReferenceRenderer> cpu_;
  std::optional<pt::SegmentedRenderer> segmented_;  // after the renderers it draws with: gone before them
};

}  // namespace

void bind_workloads(nb::module_& m) {
  nb::class_<CameraSpec>(m, "CameraSpec", "A camera: orbit (distance, azimuth, elevation) around target, or eye/target/up.")
      .def(nb::init<std::array<float, 3>, std::array<float, 3>, std::array<float, 3>, std::optional<std::array<float, 3>>,
                    float, std::int32_t, std::int32_t>(),
           "eye"_a, "target"_a, "up"_a, "orbit"_a, "fov_y_degrees"_a, "width"_a, "height"_a);

  m.def("trace_container",
        [](const std::string& path, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds,
           std::uint32_t frame, const std::string& integrator, const std::string& direction, float step_size,
           std::uint32_t max_steps, float stagnant_speed, float tolerance, float min_step, float max_step,
           const std::string& manager, unsigned threads, std::uint64_t cache_bytes, unsigned banks, bool direct,
           std::uint32_t unit_pages, double madvise_interval_s, std::uint64_t memory_budget_bytes, int device,
           const std::string& backend, std::function<bool(std::uint64_t, std::uint64_t)> progress) {
          sl::ContainerTraceOptions options;
          if (progress) {
            options.progress = [progress](std::uint64_t ended, std::uint64_t lines) {
              nb::gil_scoped_acquire acquire;
              return progress(ended, lines);
            };
          }
          options.trace = trace_options_of(integrator, direction, step_size, max_steps, stagnant_speed, tolerance, min_step,
                                           max_step);
          options.manager = parse_manager(manager);
          options.frame = frame;
          options.threads = threads;
          options.cache_bytes = cache_bytes;
          options.banks = banks;
          options.direct_io = direct;
          options.unit_pages = unit_pages;
          options.mapped = {madvise_interval_s, memory_budget_bytes};
          options.device = device;
          options.backend = headrace::io::parse_backend_kind(backend);
          const std::vector<sl::Vec3> points = seeds_of(seeds);
          sl::ContainerTraceRun run;
          {
            nb::gil_scoped_release release;
            run = sl::trace_container(path, points, options);
          }
          nb::dict result;
          put_lines(result, std::move(run.lines));
          result["seconds"] = run.seconds;
          result["layout"] = run.layout;
          result["unit_bytes"] = run.unit_bytes;
          result["cache_hits"] = run.cache.hits;
          result["cache_misses"] = run.cache.misses;
          result["cache_evictions"] = run.cache.evictions;
          result["cache_waits"] = run.cache.waits;
          result["bytes_read"] = options.manager == sl::DataManager::resident ? run.resident.bytes_read : run.cache.bytes_read;
          result["max_loads_in_flight"] = run.cache.max_loads_in_flight;
          result["madvise_calls"] = run.mapped.madvise_calls;
          result["budget_drops"] = run.mapped.budget_drops;
          result["max_resident_bytes"] = run.mapped.max_resident_bytes;
          result["resident_rounds"] = run.resident.rounds;
          result["resident_slots"] = run.resident.slots;
          result["resident_units_loaded"] = run.resident.units_loaded;
          result["resident_evictions"] = run.resident.evictions;
          result["resident_load_seconds"] = run.resident.load_seconds;
          result["resident_advance_seconds"] = run.resident.advance_seconds;
          return result;
        },
        "path"_a, "seeds"_a, "frame"_a = 0, "integrator"_a = "rk4", "direction"_a = "forward", "step_size"_a = 0.01f,
        "max_steps"_a = 1000u, "stagnant_speed"_a = 1e-6f, "tolerance"_a = 1e-5f, "min_step"_a = 1e-6f, "max_step"_a = 1.0f,
        "manager"_a = "user", "threads"_a = 0u, "cache_bytes"_a = std::uint64_t{1} << 30, "banks"_a = 1u, "direct"_a = false,
        "unit_pages"_a = 96u, "madvise_interval_s"_a = 4.0, "memory_budget_bytes"_a = std::uint64_t{0}, "device"_a = -1,
        "backend"_a = "uring", "progress"_a = nb::none(),
        "Streamlines of a flow container from (N, 3) float32 seeds: points, offsets, ends and the run's statistics. "
        "progress(ended, lines), now and then: False stops the run, and the lines it cut short end 'stopped'.");

  nb::class_<sl::HandOffTrace>(m, "HandOffTrace",
                                "One rank's share of a trace handed between the ranks of a job (native blocks): its planes of "
                                "blocks along z and their neighbours resident; lines leave for the rank holding the block they need.")
      .def("__init__",
           [](sl::HandOffTrace* self, const std::string& path, std::uint32_t rank, std::uint32_t ranks, std::uint32_t frame,
              const std::string& integrator, const std::string& direction, float step_size, std::uint32_t max_steps,
              float stagnant_speed, float tolerance, float min_step, float max_step, unsigned threads, std::uint64_t cache_bytes,
              int device, const std::string& backend) {
             sl::ContainerTraceOptions options;
             options.trace = trace_options_of(integrator, direction, step_size, max_steps, stagnant_speed, tolerance, min_step,
                                              max_step);
             options.frame = frame, options.threads = threads, options.cache_bytes = cache_bytes, options.device = device;
             options.backend = headrace::io::parse_backend_kind(backend);
             nb::gil_scoped_release release;
             new (self) sl::HandOffTrace(sl::open_flow(path, frame), rank, ranks, options);
           },
           "path"_a, "rank"_a, "ranks"_a, "frame"_a = 0, "integrator"_a = "rk4", "direction"_a = "forward", "step_size"_a = 0.01f,
           "max_steps"_a = 1000u, "stagnant_speed"_a = 1e-6f, "tolerance"_a = 1e-5f, "min_step"_a = 1e-6f, "max_step"_a = 1.0f,
           "threads"_a = 0u, "cache_bytes"_a = std::uint64_t{1} << 30, "device"_a = -1, "backend"_a = "uring")
      .def_prop_ro("resident_blocks", &sl::HandOffTrace::resident_blocks)
      .def_prop_ro("held", &sl::HandOffTrace::held)
      .def("owner_of", &sl::HandOffTrace::owner_of, "unit"_a)
      .def("start",
           [](sl::HandOffTrace& self, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds,
              std::uint64_t first_seed) { self.start(seeds_of(seeds), first_seed); },
           "seeds"_a, "first_seed"_a, "The half-lines of seeds first_seed, first_seed + 1, ... of the whole trace start here.")
      .def("run",
           [](sl::HandOffTrace& self) {
             std::vector<sl::HandedLine> leaving;
             {
               nb::gil_scoped_release release;
               leaving = self.run();
             }
             std::vector<std::uint32_t> to;
             for (const auto& h : leaving) to.push_back(self.owner_of(h.waits_for));
             const std::size_t n = to.size();
             return nb::make_tuple(record_bytes<sl::HandedLine>(leaving), owned_array(std::move(to), {n}));
           },
           "One round over the lines held: (the lines that leave, as rows of bytes; the rank each goes to).")
      .def("add", [](sl::HandOffTrace& self, RecordBytes lines) { self.add(records_of<sl::HandedLine>(lines, "handed lines")); },
           "lines"_a, "Lines handed here (rows of bytes from another rank's run()).")
      .def("result",
           [](const sl::HandOffTrace& self) {
             nb::dict out;
             out["segments"] = record_bytes<sl::TracedSegment>(self.segments());
             out["points"] = record_bytes<sl::TracedPoint>(self.points());
             out["ended"] = record_bytes<sl::HandedLine>(self.ended());
             const sl::ResidentStats& s = self.stats();
             out["rounds"] = s.rounds, out["resident_blocks"] = s.slots, out["bytes_read"] = s.bytes_read;
             out["load_seconds"] = s.load_seconds, out["advance_seconds"] = s.advance_seconds;
             return out;
           },
           "What this rank traced: segments, points and ended lines as rows of bytes (for assemble_handed), and its counters.");
  m.def("assemble_handed",
        [](nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds, const std::string& direction,
           std::uint32_t max_steps, RecordBytes ended, RecordBytes segments, RecordBytes points) {
          sl::TraceOptions options;
          options.direction = parse_direction(direction);
          options.max_steps = max_steps;
          auto lines = sl::assemble_handed(seeds_of(seeds), options, records_of<sl::HandedLine>(ended, "ended lines"),
                                                 records_of<sl::TracedSegment>(segments, "segments"),
                                                 records_of<sl::TracedPoint>(points, "points"));
          nb::dict result;
          put_lines(result, std::move(lines));
          return result;
        },
        "seeds"_a, "direction"_a, "max_steps"_a, "ended"_a, "segments"_a, "points"_a,
        "The lines of a handed-off trace from every rank's result() rows (concatenated): points, times, offsets, ends.");

  m.def("render_particles",
        [](nb::ndarray<const float, nb::shape<-1, 8>, nb::c_contig, nb::device::cpu> particles, const CameraSpec& view,
           std::uint32_t background, std::uint64_t batch_particles, unsigned threads) {
          HEADRACE_EXPECT(batch_particles > 0, UsageError, "batches need at least one particle");
          HEADRACE_EXPECT(particles.shape(0) < (std::uint64_t{1} << 32), UsageError,
                          "a frame holds at most 2^32 - 1 particles, got " + std::to_string(particles.shape(0)));
          const pt::Camera camera = camera_of(view);
          const auto* all = reinterpret_cast<const pt::Particle*>(particles.data());
          const std::uint64_t count = particles.shape(0);
          std::vector<std::uint32_t> image;
          {
            nb::gil_scoped_release release;
            pt::ReferenceRenderer renderer(camera, background, threads);
            for (std::uint64_t first = 0; first < count; first += batch_particles)
              renderer.draw({all + first, std::min(batch_particles, count - first)}, static_cast<std::uint32_t>(first));
            image = renderer.image();
          }
          return image_array(std::move(image), camera);
        },
        "particles"_a, "camera"_a, "background"_a, "batch_particles"_a, "threads"_a = 0u,
        "Sphere glyphs of (N, 8) float32 particles (x, y, z, radius, r, g, b, a) drawn by the CPU reference in batches: "
        "(height, width, 4) uint8 RGBA.");

  nb::class_<FrameRenderer>(m, "FrameRenderer",
                            "A sphere renderer kept across frames: GPU `device`, or the CPU reference for -1.")
      .def(nb::init<const CameraSpec&, std::uint32_t, int, unsigned>(), "camera"_a, "background"_a, "device"_a,
           "threads"_a = 0u, nb::call_guard<nb::gil_scoped_release>())
      .def("render",
           [](FrameRenderer& self, engine::Queue& q, queue::FileId file, const format::Container& container,
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
             return result;
           },
           "queue"_a, "file"_a, "container"_a, "frame"_a, "field"_a, "batch_particles"_a, "segments"_a, "preload"_a,
           "draw"_a = true, "next_frame"_a = nb::none(),
           "Seed 000's streaming render loop over one frame (cleared first): its statistics. next_frame: the frame "
           "the next call renders, whose first batches are loaded while this frame is drawn.")
      .def("clear", &FrameRenderer::clear, "stream"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "Back to the background (on a CUDA stream for a GPU renderer).")
      .def("draw_device", &FrameRenderer::draw_device, "particles"_a, "count"_a, "first_index"_a, "stream"_a = 0,
           "scalars"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "Draws `count` particles already in GPU memory at address `particles` (GPU only), on a CUDA stream; "
           "scalars: the address of the frame's per-particle values when the look colours by a field.")
      .def("draw_host",
           [](FrameRenderer& self, nb::ndarray<const float, nb::shape<-1, 8>, nb::c_contig, nb::device::cpu> particles,
              std::uint32_t first_index, std::optional<nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>> scalars) {
             const std::span<const pt::Particle> batch(reinterpret_cast<const pt::Particle*>(particles.data()), particles.shape(0));
             HEADRACE_EXPECT(!scalars || scalars->shape(0) >= first_index + batch.size(), UsageError,
                             "scalars: one per particle of the frame, got " + std::to_string(scalars ? scalars->shape(0) : 0));
             nb::gil_scoped_release release;
             self.draw_host(batch, first_index, scalars ? scalars->data() : nullptr);
           },
           "particles"_a, "first_index"_a = 0u, "scalars"_a = nb::none(),
           "Draws (N, 8) float32 particles in host memory with the CPU reference (CPU only); scalars: the frame's "
           "per-particle values when the look colours by a field.")
      .def("set_camera", [](FrameRenderer& self, const CameraSpec& view) { self.set_camera(camera_of(view)); }, "camera"_a,
           "Another camera from the next clear on; the image follows its size.")
      .def("set_look",
           [](FrameRenderer& self, float radius_scale, std::int32_t colour_by, std::vector<float> table, float lo, float hi) {
             self.set_look({radius_scale, colour_by, std::move(table), lo, hi});
           },
           "radius_scale"_a = 1.0f, "colour_by"_a = pt::colour_stored, "table"_a = std::vector<float>{}, "lo"_a = 0.0f,
           "hi"_a = 1.0f,
           "Radii scaled, and the colour from the record (colour_by -1), from x, y, z or radius (0..3) or from a "
           "per-particle field (8) through a 256-entry RGBA table over lo..hi.")
      .def("keys",
           [](const FrameRenderer& self, std::uintptr_t stream) {
             std::vector<std::uint64_t> keys;
             {
               nb::gil_scoped_release release;
               keys = self.keys(stream);
             }
             const auto& camera = self.camera();
             return owned_array(std::move(keys), {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width)});
           },
           "stream"_a = 0,
           "Each pixel's depth key (height, width) uint64: the ray depth's bits << 32 | the particle's number in its "
           "frame, all ones where nothing was drawn; once `stream` has finished. Sort-last compositing keeps the least.")
      .def("image", [](const FrameRenderer& self, std::uintptr_t stream) { return image_array(self.image(stream), self.camera()); },
           "stream"_a = 0, "The image (height, width, 4) uint8 RGBA, once `stream` has finished.");

  m.def("particle_batches",
        [](const format::Container& container, std::uint32_t frame, std::uint32_t field, std::uint64_t batch_particles) {
          nb::list out;
          for (const auto& b : pt::particle_batches(container, frame, field, batch_particles))
            out.append(nb::make_tuple(b.first_chunk, b.chunk_count, b.first_particle, b.particles));
          return out;
        },
        "container"_a, "frame"_a, "field"_a, "batch_particles"_a,
        "The batches of seed 000's loop: (first chunk, chunks, first particle, particles), whole chunks each.");

  m.def("feature_seeds",
        [](const std::string& path, float low, float high, std::uint32_t stride, std::uint32_t frame, unsigned threads) {
          std::vector<sl::Vec3> seeds;
          {
            nb::gil_scoped_release release;
            seeds = sl::feature_seeds(path, low, high, stride, frame, threads);
          }
          std::vector<float> flat(3 * seeds.size());
          std::memcpy(flat.data(), seeds.data(), flat.size() * sizeof(float));
          return owned_array(std::move(flat), {seeds.size(), 3});
        },
        "path"_a, "low"_a, "high"_a, "stride"_a = 1u, "frame"_a = 0u, "threads"_a = 0u,
        "Interior grid points (every stride-th) whose vorticity magnitude lies in [low, high), as (N, 3) float32.");

  m.def("sample_flow",
        [](const std::string& path, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> points,
           std::uint32_t frame, unsigned threads) {
          std::vector<sl::Vec3> at(points.shape(0));
          std::memcpy(at.data(), points.data(), at.size() * sizeof(sl::Vec3));
          std::vector<sl::Vec3> velocities;
          {
            nb::gil_scoped_release release;
            velocities = sl::sample_flow(path, at, frame, threads);
          }
          std::vector<float> flat(3 * velocities.size());
          std::memcpy(flat.data(), velocities.data(), flat.size() * sizeof(float));
          return owned_array(std::move(flat), {velocities.size(), 3});
        },
        "path"_a, "points"_a, "frame"_a = 0u, "threads"_a = 0u,
        "The flow's velocity at (N, 3) float32 points, trilinear as the tracers sample it (NaN outside the grid).");

  m.def("hilbert_order",
        [](std::uint32_t bits) {
          HEADRACE_EXPECT(bits >= 1 && bits <= 10, UsageError, "Hilbert partitions of 2^1 to 2^10 points a side in memory");
          const std::uint32_t p = 1u << bits;
          std::vector<std::uint32_t> order(std::size_t{p} * p * p);
          for (std::uint64_t h = 0; h < order.size(); ++h) {
            std::uint32_t q[3];
            sl::hilbert_point(h, bits, q);
            order[h] = q[0] + p * (q[1] + p * q[2]);
          }
          const std::size_t n = order.size();
          return owned_array(std::move(order), {n});
        },
        "bits"_a, "The partition-local point (x fastest) at each Hilbert index of a cube of 2^bits points a side.");

  m.def("convert_blocks_to_hilbert",
        [](const std::string& input, const std::string& output, std::uint32_t bits, std::uint32_t chunk_pages,
           std::function<void(std::uint64_t, std::uint64_t)> progress) {
          std::function<void(std::uint64_t, std::uint64_t)> report;
          if (progress)
            report = [&progress](std::uint64_t done, std::uint64_t total) {
              nb::gil_scoped_acquire acquire;
              progress(done, total);
            };
          nb::gil_scoped_release release;
          return sl::convert_blocks_to_hilbert(input, output, bits, chunk_pages, report);
        },
        "input"_a, "output"_a, "bits"_a, "chunk_pages"_a, "progress"_a = nb::none(),
        "Rewrites a blocks-layout flow container in the Hilbert layout; returns the seconds it took.");
}

}  // namespace headrace::python
