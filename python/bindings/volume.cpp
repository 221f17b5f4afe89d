// workloads layer: the volume and AMR renderer of seed 003 and its animation loop (headrace.volume).
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <optional>

#include "bindings.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/workloads/volume/animation.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace vol = headrace::workloads::volume;

namespace headrace::python {
namespace {

using Scalars = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// The topology of one field of a container, and the GPU renderer or the CPU reference over it, with the
// transfer function and settings every image of it uses.
class VolumeRenderer {
 public:
  VolumeRenderer(const format::Container& container, std::uint32_t field, int device, unsigned threads, std::uint64_t most_regions)
      : container_(container), field_(field), topology_(vol::VolumeTopology::of_container(container, field, most_regions)) {
    if (device >= 0)
      gpu_.emplace(device, topology_);
    else
      cpu_.emplace(topology_, threads);
  }

  void set_view(const std::vector<float>& rgba, float lo, float hi, bool iso_mode, float iso, std::uint32_t background,
                float base_step, float sampling, bool skip_empty, float footprint) {
    vol::TransferFunction tf{rgba, lo, hi};
    vol::RenderSettings settings{iso_mode, iso, background, base_step, sampling, skip_empty, footprint};
    vol::check_transfer_function(tf);
    if (gpu_) gpu_->set_transfer_function(tf, settings);
    tf_ = std::move(tf), settings_ = settings;
  }

  std::vector<vol::ValueRange> ranges(std::span<const float> scalars) {
    if (cpu_) return cpu_->ranges(scalars);
    const Resident resident = prepared(scalars, false);
    return gpu_->ranges_of(*resident.state);
  }

  std::vector<std::uint8_t> visible(std::span<const float> scalars) {
    expect_view();
    if (cpu_) return cpu_->classify(cpu_->ranges(scalars), *tf_, settings_);
    const Resident resident = prepared(scalars, true);
    return gpu_->visible_of(*resident.state);
  }

  std::vector<std::uint32_t> image(std::span<const float> scalars, const vol::Camera& camera) {
    expect_view();
    if (cpu_) return cpu_->render(scalars, cpu_->classify(cpu_->ranges(scalars), *tf_, settings_), camera, *tf_, settings_);
    const Resident resident = prepared(scalars, true);
    gpu_->render(resident.scalars.pointer(), *resident.state, camera, resident.stream.handle());
    return gpu_->image(resident.stream.handle());
  }

  // The viewer's path: a frame resident where the renderer runs (a FrameStream's slot: GPU memory at
  // `scalars` for a GPU renderer, host memory for the reference). prepare: its value ranges and
  // classification, once per frame; classify: again after set_view; render: an image from any camera.
  void prepare_device(std::uintptr_t scalars, std::uintptr_t stream) {
    expect_view(), expect_gpu();
    if (!resident_) resident_ = gpu_->region_state();
    gpu_->ranges(scalars, *resident_, reinterpret_cast<gpu::CUstream>(stream));
    gpu_->classify(*resident_, reinterpret_cast<gpu::CUstream>(stream));
  }
  void prepare_host(std::span<const float> scalars) {
    expect_view();
    HEADRACE_EXPECT(cpu_.has_value(), UsageError, "prepare_host renders with the CPU reference; this renderer is a GPU's");
    expect_cells(scalars.size());
    host_ranges_ = cpu_->ranges(scalars);
    host_visible_ = cpu_->classify(host_ranges_, *tf_, settings_);
  }
  void classify(std::uintptr_t stream) {
    expect_prepared();
    if (gpu_)
      gpu_->classify(*resident_, reinterpret_cast<gpu::CUstream>(stream));
    else
      host_visible_ = cpu_->classify(host_ranges_, *tf_, settings_);
  }
  std::vector<std::uint32_t> render_device(std::uintptr_t scalars, const vol::Camera& camera, std::uintptr_t stream) {
    expect_prepared(), expect_gpu();
    gpu_->render(scalars, *resident_, camera, reinterpret_cast<gpu::CUstream>(stream));
    return gpu_->image(reinterpret_cast<gpu::CUstream>(stream));
  }
  std::vector<std::uint32_t> render_host(std::span<const float> scalars, const vol::Camera& camera) {
    expect_prepared();
    HEADRACE_EXPECT(cpu_.has_value(), UsageError, "render_host renders with the CPU reference; this renderer is a GPU's");
    expect_cells(scalars.size());
    return cpu_->render(scalars, host_visible_, camera, *tf_, settings_);
  }

  // Sort-last: from now on this renderer draws one slab of the grid (VolumeTopology::slab) from a frame
  // buffer of the runs it holds.
  void share_slab(vol::RegionSlab slab, std::span<const vol::ElementRun> held) {
    vol::VolumeTopology sliced = topology_.slab(slab, held);
    const int ordinal = device();
    gpu_.reset(), resident_.reset(), host_ranges_.clear(), host_visible_.clear();
    topology_ = std::move(sliced);
    if (ordinal >= 0) {
      gpu_.emplace(ordinal, topology_);
      if (tf_) gpu_->set_transfer_function(*tf_, settings_);
    }
  }
  std::vector<float> render_layer_device(std::uintptr_t scalars, const vol::Camera& camera, std::uintptr_t stream) {
    expect_prepared(), expect_gpu();
    gpu_->render_layer(scalars, *resident_, camera, reinterpret_cast<gpu::CUstream>(stream));
    return gpu_->layer(reinterpret_cast<gpu::CUstream>(stream));
  }
  std::vector<float> render_layer_host(std::span<const float> scalars, const vol::Camera& camera) {
    expect_prepared();
    HEADRACE_EXPECT(cpu_.has_value(), UsageError, "render_layer_host renders with the CPU reference; this renderer is a GPU's");
    expect_cells(scalars.size());
    return cpu_->render_layer(scalars, host_visible_, camera, *tf_, settings_);
  }

  vol::PlayResult play(engine::Queue* queue, vol::PlayOptions options) {
    expect_view();
    options.field = field_, options.tf = *tf_, options.settings = settings_;
    if (cpu_) return vol::play(container_, topology_, *cpu_, queue, options);
    return vol::play(container_, topology_, *gpu_, queue, options);
  }

  double render_only_seconds(const vol::Camera& camera, std::uint32_t frame, unsigned repeats) {
    expect_view();
    vol::PlayOptions options;
    options.field = field_, options.tf = *tf_, options.settings = settings_, options.camera = camera;
    HEADRACE_EXPECT(frame < container_.frames().size(), UsageError, container_.path() + ": no frame " + std::to_string(frame));
    if (cpu_) return vol::render_only_seconds(container_, topology_, *cpu_, options, frame, repeats);
    return vol::render_only_seconds(container_, topology_, *gpu_, options, frame, repeats);
  }

  [[nodiscard]] const vol::VolumeTopology& topology() const { return topology_; }
  [[nodiscard]] int device() const { return gpu_ ? gpu_->device() : -1; }

 private:
  // A frame given in host memory, in GPU memory with its ranges (and classification) done on its stream.
  struct Resident {
    gpu::Stream stream;
    gpu::DeviceBuffer scalars;
    std::optional<vol::GpuRegionState> state;
  };
  Resident prepared(std::span<const float> scalars, bool classify) {
    HEADRACE_EXPECT(scalars.size() == topology_.cell_count(), UsageError,
                    "a frame holds " + std::to_string(topology_.cell_count()) + " cells, got " + std::to_string(scalars.size()));
    gpu_->make_current();
    Resident r{gpu::Stream(), gpu::DeviceBuffer(std::max<std::size_t>(scalars.size_bytes(), 4)), gpu_->region_state()};
    gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(r.scalars.pointer(), scalars.data(), scalars.size_bytes(), r.stream.handle()),
               "cuMemcpyHtoDAsync");
    gpu_->ranges(r.scalars.pointer(), *r.state, r.stream.handle());
    if (classify) gpu_->classify(*r.state, r.stream.handle());
    r.stream.synchronize();  // the copy reads the caller's array
    return r;
  }
  void expect_view() const { HEADRACE_EXPECT(tf_.has_value(), UsageError, "set_view() first: a transfer function"); }
  void expect_gpu() const {
    HEADRACE_EXPECT(gpu_.has_value(), UsageError, "a frame in GPU memory needs a GPU renderer; this one is the CPU reference");
  }
  void expect_prepared() const {
    HEADRACE_EXPECT(resident_.has_value() || !host_ranges_.empty(), UsageError, "prepare a resident frame first");
  }
  void expect_cells(std::size_t cells) const {
    HEADRACE_EXPECT(cells == topology_.cell_count(), UsageError,
                    "a frame holds " + std::to_string(topology_.cell_count()) + " cells, got " + std::to_string(cells));
  }

  const format::Container& container_;
  std::uint32_t field_;
  vol::VolumeTopology topology_;
  std::optional<vol::GpuVolumeRenderer> gpu_;
  std::optional<vol::CpuVolumeRenderer> cpu_;
  std::optional<vol::TransferFunction> tf_;
  vol::RenderSettings settings_;
  std::optional<vol::GpuRegionState> resident_;  // the resident frame's ranges and classification (GPU)
  std::vector<vol::ValueRange> host_ranges_;     // ... and on the CPU
  std::vector<std::uint8_t> host_visible_;
};

nb::dict played(const vol::PlayResult& result) {
  nb::list frames;
  for (const auto& f : result.frames) {
    nb::dict spans;
    for (const auto& s : f.spans) {
      const char* name = vol::span_name(s.kind);
      if (!spans.contains(name)) spans[name] = nb::list();
      nb::list(spans[name]).append(nb::make_tuple(s.start, s.end));
    }
    nb::dict frame;
    frame["frame"] = f.frame, frame["start"] = f.start, frame["end"] = f.end, frame["spans"] = spans;
    frames.append(frame);
  }
  nb::dict out;
  out["frames"] = frames;
  out["seconds"] = result.seconds;
  out["frame_bytes"] = result.frame_bytes;
  out["stored_bytes"] = result.stored_bytes;
  out["notes"] = result.notes;
  return out;
}

std::span<const float> span_of(const Scalars& scalars) { return {scalars.data(), scalars.shape(0)}; }

using Runs = nb::ndarray<const std::uint64_t, nb::shape<-1, 2>, nb::c_contig, nb::device::cpu>;

nb::ndarray<nb::numpy, std::uint64_t> runs_array(std::vector<vol::ElementRun>&& runs) {
  auto* heap = new std::vector<vol::ElementRun>(std::move(runs));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<vol::ElementRun>*>(p); });
  const std::size_t shape[2] = {heap->size(), 2};
  return nb::ndarray<nb::numpy, std::uint64_t>(reinterpret_cast<std::uint64_t*>(heap->data()), 2, shape, owner);
}

// A layer (height, width, 4) float32 of premultiplied RGBA.
nb::ndarray<nb::numpy, float> layer_array(std::vector<float>&& rgba, const vol::Camera& camera) {
  auto* heap = new std::vector<float>(std::move(rgba));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  const std::size_t shape[3] = {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width), 4};
  return nb::ndarray<nb::numpy, float>(heap->data(), 3, shape, owner);
}

}  // namespace

void bind_volume(nb::module_& m) {
  m.def("overlapping_bricks",
        [](nb::ndarray<const std::int64_t, nb::shape<-1, 7>, nb::c_contig, nb::device::cpu> bricks, const std::vector<std::int64_t>& refinement)
            -> std::optional<std::pair<std::uint64_t, std::uint64_t>> {
          std::vector<vol::AmrBrick> list(bricks.shape(0));
          const std::int64_t* row = bricks.data();
          for (auto& b : list) {
            HEADRACE_EXPECT(row[0] >= 0 && row[0] < 32, UsageError, "brick levels lie in 0..31");
            b = {static_cast<std::int32_t>(row[0]), {row[1], row[2], row[3]}, {row[4], row[5], row[6]}};
            row += 7;
          }
          nb::gil_scoped_release release;
          return vol::overlapping_bricks(list, refinement);
        },
        "bricks"_a, "refinement"_a,
        "The first two bricks (rows of level, lower xyz, size xyz) that share a cell, or None.");

  nb::class_<vol::VolumeTopology>(m, "VolumeTopology", "The fixed topology of a volume: bricks and the region grid over them.")
      .def_prop_ro("cell_count", &vol::VolumeTopology::cell_count)
      .def_prop_ro("region_count", &vol::VolumeTopology::region_count)
      .def_prop_ro("brick_count", [](const vol::VolumeTopology& t) { return t.bricks().size(); })
      .def_prop_ro("region_entries", [](const vol::VolumeTopology& t) { return t.region_bricks().size(); })
      .def_prop_ro("domain", [](const vol::VolumeTopology& t) {
        const auto lo = t.domain_lower(), hi = t.domain_upper();
        return nb::make_tuple(nb::make_tuple(lo.x, lo.y, lo.z), nb::make_tuple(hi.x, hi.y, hi.z));
      })
      .def("cut_slabs",
           [](const vol::VolumeTopology& t, std::uint32_t count) {
             std::vector<std::pair<std::int32_t, std::int32_t>> out;
             for (const vol::RegionSlab& s : t.cut_slabs(count)) out.emplace_back(s.first, s.last);
             return out;
           },
           "count"_a, "Sort-last: `count` slabs (first, last) of whole region layers along z, in order, about equal cells each.")
      .def("slab_cells",
           [](const vol::VolumeTopology& t, std::int32_t first, std::int32_t last) { return runs_array(t.slab_cells({first, last})); },
           "first"_a, "last"_a, "The (first element, count) runs of a frame the slab's renderer needs, ascending.")
      .def_prop_ro("slab", [](const vol::VolumeTopology& t) {
        const vol::RegionSlab s = t.slab_drawn();
        return std::make_pair(s.first, s.last);
      });
  m.def("composite_layers",
        [](nb::ndarray<const float, nb::ndim<4>, nb::c_contig, nb::device::cpu> layers, const CameraSpec& view, std::int32_t first_row,
           std::uint32_t background) {
          const vol::Camera camera = camera_of(view);
          HEADRACE_EXPECT(layers.shape(2) == static_cast<std::size_t>(camera.width) && layers.shape(3) == 4, UsageError,
                          "layers are (slabs, rows, width, 4) float32 of the camera's width");
          const auto count = static_cast<std::uint32_t>(layers.shape(0));
          const auto rows = static_cast<std::int32_t>(layers.shape(1));
          std::vector<std::uint32_t> pixels;
          {
            nb::gil_scoped_release release;
            pixels = vol::composite_layers({layers.data(), layers.size()}, count, camera, first_row, rows, background);
          }
          vol::Camera strip = camera;
          strip.height = rows;
          return image_array(std::move(pixels), strip);
        },
        "layers"_a, "camera"_a, "first_row"_a, "background"_a,
        "Sort-last: rows first_row.. of the image composited from the slabs' layers (slabs, rows, width, 4), front to back "
        "in each ray's order, over the packed RGBA8 background: (rows, width, 4) uint8.");

  nb::class_<VolumeRenderer>(m, "VolumeRenderer",
                             "The volume renderer over one float32 field of a container: GPU `device`, or the CPU reference for -1.")
      .def(nb::init<const format::Container&, std::uint32_t, int, unsigned, std::uint64_t>(), "container"_a, "field"_a, "device"_a,
           "threads"_a = 0u, "most_regions"_a = vol::default_most_regions, nb::keep_alive<1, 2>(),
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("topology", &VolumeRenderer::topology, nb::rv_policy::reference_internal)
      .def_prop_ro("device", &VolumeRenderer::device)
      .def("set_view", &VolumeRenderer::set_view, "rgba"_a, "lo"_a, "hi"_a, "iso_mode"_a, "iso"_a, "background"_a, "base_step"_a,
           "sampling"_a, "skip_empty"_a = true, "footprint"_a = 0.0f, nb::call_guard<nb::gil_scoped_release>(),
           "The transfer function (256 RGBA entries, flat, over lo..hi) and settings of every image from now on.")
      .def("ranges",
           [](VolumeRenderer& self, Scalars scalars) {
             std::vector<vol::ValueRange> ranges;
             {
               nb::gil_scoped_release release;
               ranges = self.ranges(span_of(scalars));
             }
             std::vector<float> flat(ranges.size() * 2);
             std::memcpy(flat.data(), ranges.data(), flat.size() * sizeof(float));
             auto* heap = new std::vector<float>(std::move(flat));
             nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
             const std::size_t shape[2] = {heap->size() / 2, 2};
             return nb::ndarray<nb::numpy, float>(heap->data(), 2, shape, owner);
           },
           "scalars"_a, "Each region's (min, max) over the cells whose tents reach into it; min > max: no cell.")
      .def("visible",
           [](VolumeRenderer& self, Scalars scalars) {
             std::vector<std::uint8_t> visible;
             {
               nb::gil_scoped_release release;
               visible = self.visible(span_of(scalars));
             }
             auto* heap = new std::vector<std::uint8_t>(std::move(visible));
             nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
             const std::size_t shape[1] = {heap->size()};
             return nb::ndarray<nb::numpy, std::uint8_t>(heap->data(), 1, shape, owner);
           },
           "scalars"_a, "Each region's classification under the view (1: drawn).")
      .def("image",
           [](VolumeRenderer& self, Scalars scalars, const CameraSpec& view) {
             const vol::Camera camera = camera_of(view);
             std::vector<std::uint32_t> pixels;
             {
               nb::gil_scoped_release release;
               pixels = self.image(span_of(scalars), camera);
             }
             return image_array(std::move(pixels), camera);
           },
           "scalars"_a, "camera"_a, "The image (height, width, 4) uint8 RGBA of a frame given in host memory.")
      .def("prepare_device", &VolumeRenderer::prepare_device, "scalars"_a, "stream"_a = 0,
           nb::call_guard<nb::gil_scoped_release>(),
           "A frame resident in GPU memory at address `scalars` (cell_count float32 in brick order): its value ranges "
           "and classification, on a CUDA stream, kept for render_device.")
      .def("prepare_host",
           [](VolumeRenderer& self, Scalars scalars) {
             nb::gil_scoped_release release;
             self.prepare_host(span_of(scalars));
           },
           "scalars"_a, "A frame in host memory (CPU reference): its value ranges and classification, kept for render_host.")
      .def("classify", &VolumeRenderer::classify, "stream"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "The prepared frame classified again under the view set since.")
      .def("render_device",
           [](VolumeRenderer& self, std::uintptr_t scalars, const CameraSpec& view, std::uintptr_t stream) {
             const vol::Camera camera = camera_of(view);
             std::vector<std::uint32_t> pixels;
             {
               nb::gil_scoped_release release;
               pixels = self.render_device(scalars, camera, stream);
             }
             return image_array(std::move(pixels), camera);
           },
           "scalars"_a, "camera"_a, "stream"_a = 0,
           "The image (height, width, 4) uint8 RGBA of the prepared frame at `scalars` in GPU memory, rendered on a CUDA "
           "stream (waited for).")
      .def("render_host",
           [](VolumeRenderer& self, Scalars scalars, const CameraSpec& view) {
             const vol::Camera camera = camera_of(view);
             std::vector<std::uint32_t> pixels;
             {
               nb::gil_scoped_release release;
               pixels = self.render_host(span_of(scalars), camera);
             }
             return image_array(std::move(pixels), camera);
           },
           "scalars"_a, "camera"_a, "The image of the prepared frame in host memory (CPU reference).")
      .def("share_slab",
           [](VolumeRenderer& self, std::int32_t first, std::int32_t last, Runs held) {
             nb::gil_scoped_release release;
             self.share_slab({first, last}, {reinterpret_cast<const vol::ElementRun*>(held.data()), held.shape(0)});
           },
           "first"_a, "last"_a, "held"_a,
           "Sort-last: from now on this renderer draws region layers first..last along z from a frame buffer of the runs "
           "`held` ((first element, count) rows, ascending, packed in that order).")
      .def("render_layer_device",
           [](VolumeRenderer& self, std::uintptr_t scalars, const CameraSpec& view, std::uintptr_t stream) {
             const vol::Camera camera = camera_of(view);
             std::vector<float> rgba;
             {
               nb::gil_scoped_release release;
               rgba = self.render_layer_device(scalars, camera, stream);
             }
             return layer_array(std::move(rgba), camera);
           },
           "scalars"_a, "camera"_a, "stream"_a = 0, "The prepared frame's slab as premultiplied RGBA (height, width, 4) float32 (GPU).")
      .def("render_layer_host",
           [](VolumeRenderer& self, Scalars scalars, const CameraSpec& view) {
             const vol::Camera camera = camera_of(view);
             std::vector<float> rgba;
             {
               nb::gil_scoped_release release;
               rgba = self.render_layer_host(span_of(scalars), camera);
             }
             return layer_array(std::move(rgba), camera);
           },
           "scalars"_a, "camera"_a, "The prepared frame's slab as premultiplied RGBA (height, width, 4) float32 (CPU reference).")
      .def("play",
           [](VolumeRenderer& self, engine::Queue* queue, const std::string& stage, const std::vector<std::uint32_t>& frames,
              const CameraSpec& view, std::optional<nb::callable> on_image, std::uint32_t slots) {
             vol::PlayOptions options;
             options.stage = vol::parse_stage(stage);
             options.frames = frames;
             options.camera = camera_of(view);
             options.slots = slots;
             if (on_image) {
               const vol::Camera camera = options.camera;
               options.on_image = [callback = *on_image, camera](std::uint32_t frame, std::vector<std::uint32_t>&& pixels) {
                 nb::gil_scoped_acquire acquire;
                 return nb::cast<bool>(callback(frame, image_array(std::move(pixels), camera)));
               };
             }
             vol::PlayResult result;
             {
               nb::gil_scoped_release release;
               result = self.play(queue, std::move(options));
             }
             return played(result);
           },
           "queue"_a.none(), "stage"_a, "frames"_a, "camera"_a, "on_image"_a = nb::none(), "slots"_a = 3u,
           "Seed 003's animation loop over `frames` with the steps of `stage` (cumulative): per frame its spans of "
           "work (io, flatten, decode, h2d, ranges, structure, render) in seconds since the run began. on_image(frame, "
           "image) -> bool sees each image; False stops. queue: the engine's queue for the `all` stage.")
      .def("render_only_seconds", [](VolumeRenderer& self, const CameraSpec& view, std::uint32_t frame, unsigned repeats) {
             const vol::Camera camera = camera_of(view);
             nb::gil_scoped_release release;
             return self.render_only_seconds(camera, frame, repeats);
           },
           "camera"_a, "frame"_a, "repeats"_a = 5u, "Seconds per image of frame `frame` resident in memory, rendering alone.");
}

}  // namespace headrace::python
