// workloads layer: the volume and AMR renderer of seed 003 and its animation loop (the volume workload): its
// session (volume/volume_session.hpp) as VolumeRenderer, the topology and sort-last compositing.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <optional>

#include "bindings.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/volume/layer_compositor.hpp"
#include "headrace/workloads/volume/volume_session.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace common = headrace::workloads::common;
namespace vol = headrace::workloads::volume;

namespace headrace::python {
namespace {

using Scalars = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

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

nb::ndarray<nb::numpy, std::uint64_t> runs_array(const std::vector<vol::ElementRun>& runs) {
  static_assert(sizeof(vol::ElementRun) == 2 * sizeof(std::uint64_t));
  std::vector<std::uint64_t> flat(2 * runs.size());
  if (!flat.empty()) std::memcpy(flat.data(), runs.data(), flat.size() * sizeof(std::uint64_t));
  return owned_array(std::move(flat), {runs.size(), 2});
}

// A layer (height, width, 4) float32 of premultiplied RGBA.
nb::ndarray<nb::numpy, float> layer_array(std::vector<float>&& rgba, const vol::Camera& camera) {
  return owned_array(std::move(rgba), {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width), 4});
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
          const vol::Camera camera = common::camera_of(view);
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

  nb::class_<vol::LayerCompositor>(m, "LayerCompositor",
                                   "Sort-last compositing of volume layers front to back on the GPUs that drew them, over NCCL.")
      .def("__init__",
           [](vol::LayerCompositor* self, const gpu::Communicator& communicator, const CameraSpec& view, std::uint32_t background) {
             new (self) vol::LayerCompositor(communicator, common::camera_of(view), background);
           },
           "communicator"_a, "camera"_a, "background"_a, nb::keep_alive<1, 2>(), nb::call_guard<nb::gil_scoped_release>())
      .def("composite",
           [](vol::LayerCompositor& self, const vol::VolumeSession& renderer, const CameraSpec& view, std::uintptr_t stream)
               -> std::optional<nb::ndarray<nb::numpy, std::uint8_t>> {
             const gpu::CUdeviceptr layer = renderer.layer_pointer();
             std::vector<std::uint32_t> image;
             {
               nb::gil_scoped_release release;  // collective: waits for every rank
               image = self.composite(layer, cuda_stream(stream));
             }
             if (image.empty()) return std::nullopt;
             return image_array(std::move(image), common::camera_of(view));
           },
           "renderer"_a, "camera"_a, "stream"_a = 0,
           "This rank's layer (the renderer's, drawn by draw_layer_device on `stream`; ranks in slab order) composited "
           "with every rank's: the image (height, width, 4) uint8 on rank 0, None elsewhere.");

  nb::class_<vol::VolumeSession>(m, "VolumeRenderer",
                                 "The volume renderer over one float32 field of a container: GPU `device`, or the CPU reference for -1.")
      .def(nb::init<const format::Container&, std::uint32_t, int, unsigned, std::uint64_t>(), "container"_a, "field"_a, "device"_a,
           "threads"_a = 0u, "most_regions"_a = vol::default_most_regions, nb::keep_alive<1, 2>(),
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("topology", &vol::VolumeSession::topology, nb::rv_policy::reference_internal)
      .def_prop_ro("device", &vol::VolumeSession::device)
      .def("set_view",
           [](vol::VolumeSession& self, std::vector<float> rgba, float lo, float hi, bool iso_mode, float iso, std::uint32_t background,
              float base_step, float sampling, bool skip_empty, float footprint) {
             self.set_view({std::move(rgba), lo, hi}, {iso_mode, iso, background, base_step, sampling, skip_empty, footprint});
           },
           "rgba"_a, "lo"_a, "hi"_a, "iso_mode"_a, "iso"_a, "background"_a, "base_step"_a, "sampling"_a, "skip_empty"_a = true,
           "footprint"_a = 0.0f, nb::call_guard<nb::gil_scoped_release>(),
           "The transfer function (256 RGBA entries, flat, over lo..hi) and settings of every image from now on.")
      .def("ranges",
           [](vol::VolumeSession& self, Scalars scalars) {
             std::vector<vol::ValueRange> ranges;
             {
               nb::gil_scoped_release release;
               ranges = self.ranges(span_of(scalars));
             }
             static_assert(sizeof(vol::ValueRange) == 2 * sizeof(float));
             std::vector<float> flat(ranges.size() * 2);
             if (!flat.empty()) std::memcpy(flat.data(), ranges.data(), flat.size() * sizeof(float));
             return owned_array(std::move(flat), {ranges.size(), 2});
           },
           "scalars"_a, "Each region's (min, max) over the cells whose tents reach into it; min > max: no cell.")
      .def("visible",
           [](vol::VolumeSession& self, Scalars scalars) {
             std::vector<std::uint8_t> visible;
             {
               nb::gil_scoped_release release;
               visible = self.visible(span_of(scalars));
             }
             const std::size_t regions = visible.size();
             return owned_array(std::move(visible), {regions});
           },
           "scalars"_a, "Each region's classification under the view (1: drawn).")
      .def("image",
           [](vol::VolumeSession& self, Scalars scalars, const CameraSpec& view) {
             const vol::Camera camera = common::camera_of(view);
             std::vector<std::uint32_t> pixels;
             {
               nb::gil_scoped_release release;
               pixels = self.image(span_of(scalars), camera);
             }
             return image_array(std::move(pixels), camera);
           },
           "scalars"_a, "camera"_a, "The image (height, width, 4) uint8 RGBA of a frame given in host memory.")
      .def("prepare_device",
           [](vol::VolumeSession& self, std::uintptr_t scalars, std::uintptr_t stream) { self.prepare_device(scalars, cuda_stream(stream)); },
           "scalars"_a, "stream"_a = 0,
           nb::call_guard<nb::gil_scoped_release>(),
           "A frame resident in GPU memory at address `scalars` (cell_count float32 in brick order): its value ranges "
           "and classification, on a CUDA stream, kept for render_device.")
      .def("prepare_host",
           [](vol::VolumeSession& self, Scalars scalars) {
             nb::gil_scoped_release release;
             self.prepare_host(span_of(scalars));
           },
           "scalars"_a, "A frame in host memory (CPU reference): its value ranges and classification, kept for render_host.")
      .def("classify", [](vol::VolumeSession& self, std::uintptr_t stream) { self.classify(cuda_stream(stream)); }, "stream"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "The prepared frame classified again under the view set since.")
      .def("render_device",
           [](vol::VolumeSession& self, std::uintptr_t scalars, const CameraSpec& view, std::uintptr_t stream) {
             const vol::Camera camera = common::camera_of(view);
             std::vector<std::uint32_t> pixels;
             {
               nb::gil_scoped_release release;
               pixels = self.render_device(scalars, camera, cuda_stream(stream));
             }
             return image_array(std::move(pixels), camera);
           },
           "scalars"_a, "camera"_a, "stream"_a = 0,
           "The image (height, width, 4) uint8 RGBA of the prepared frame at `scalars` in GPU memory, rendered on a CUDA "
           "stream (waited for).")
      .def("render_host",
           [](vol::VolumeSession& self, Scalars scalars, const CameraSpec& view) {
             const vol::Camera camera = common::camera_of(view);
             std::vector<std::uint32_t> pixels;
             {
               nb::gil_scoped_release release;
               pixels = self.render_host(span_of(scalars), camera);
             }
             return image_array(std::move(pixels), camera);
           },
           "scalars"_a, "camera"_a, "The image of the prepared frame in host memory (CPU reference).")
      .def("share_slab",
           [](vol::VolumeSession& self, std::int32_t first, std::int32_t last, Runs held) {
             nb::gil_scoped_release release;
             self.share_slab({first, last}, {reinterpret_cast<const vol::ElementRun*>(held.data()), held.shape(0)});
           },
           "first"_a, "last"_a, "held"_a,
           "Sort-last: from now on this renderer draws region layers first..last along z from a frame buffer of the runs "
           "`held` ((first element, count) rows, ascending, packed in that order).")
      .def("render_layer_device",
           [](vol::VolumeSession& self, std::uintptr_t scalars, const CameraSpec& view, std::uintptr_t stream) {
             const vol::Camera camera = common::camera_of(view);
             std::vector<float> rgba;
             {
               nb::gil_scoped_release release;
               rgba = self.render_layer_device(scalars, camera, cuda_stream(stream));
             }
             return layer_array(std::move(rgba), camera);
           },
           "scalars"_a, "camera"_a, "stream"_a = 0, "The prepared frame's slab as premultiplied RGBA (height, width, 4) float32 (GPU).")
      .def("draw_layer_device",
           [](vol::VolumeSession& self, std::uintptr_t scalars, const CameraSpec& view, std::uintptr_t stream) {
             self.draw_layer_device(scalars, common::camera_of(view), cuda_stream(stream));
           },
           "scalars"_a, "camera"_a, "stream"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "The prepared frame's slab drawn into the renderer's layer in GPU memory, left there for a LayerCompositor.")
      .def("render_layer_host",
           [](vol::VolumeSession& self, Scalars scalars, const CameraSpec& view) {
             const vol::Camera camera = common::camera_of(view);
             std::vector<float> rgba;
             {
               nb::gil_scoped_release release;
               rgba = self.render_layer_host(span_of(scalars), camera);
             }
             return layer_array(std::move(rgba), camera);
           },
           "scalars"_a, "camera"_a, "The prepared frame's slab as premultiplied RGBA (height, width, 4) float32 (CPU reference).")
      .def("play",
           [](vol::VolumeSession& self, engine::Queue* queue, const std::string& stage, const std::vector<std::uint32_t>& frames,
              const CameraSpec& view, std::optional<nb::callable> on_image, std::uint32_t slots) {
             vol::PlayOptions options;
             options.stage = vol::parse_stage(stage);
             options.frames = frames;
             options.camera = common::camera_of(view);
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
      .def("render_only_seconds", [](vol::VolumeSession& self, const CameraSpec& view, std::uint32_t frame, unsigned repeats) {
             const vol::Camera camera = common::camera_of(view);
             nb::gil_scoped_release release;
             return self.render_only_seconds(camera, frame, repeats);
           },
           "camera"_a, "frame"_a, "repeats"_a = 5u, "Seconds per image of frame `frame` resident in memory, rendering alone.");
}

}  // namespace headrace::python
