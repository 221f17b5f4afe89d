#include "headrace/workloads/volume/volume_session.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "headrace/error.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::workloads::volume {

struct VolumeSession::Resident {
  gpu::Stream stream;
  gpu::DeviceBuffer scalars;
  std::optional<GpuRegionState> state;
};

VolumeSession::VolumeSession(const format::Container& container, std::uint32_t field, int device, unsigned threads,
                             std::uint64_t most_regions)
    : container_(container), field_(field), topology_(VolumeTopology::of_container(container, field, most_regions)) {
  if (device >= 0)
    gpu_.emplace(device, topology_);
  else
    cpu_.emplace(topology_, threads);
}

void VolumeSession::set_view(const TransferFunction& tf, const RenderSettings& settings) {
  check_transfer_function(tf);
  if (gpu_) gpu_->set_transfer_function(tf, settings);
  tf_ = tf, settings_ = settings;
}

std::vector<ValueRange> VolumeSession::ranges(std::span<const float> scalars) {
  if (cpu_) return cpu_->ranges(scalars);
  const Resident resident = prepared(scalars, false);
  return gpu_->ranges_of(*resident.state);
}

std::vector<std::uint8_t> VolumeSession::visible(std::span<const float> scalars) {
  expect_view();
  if (cpu_) return cpu_->classify(cpu_->ranges(scalars), *tf_, settings_);
  const Resident resident = prepared(scalars, true);
  return gpu_->visible_of(*resident.state);
}

std::vector<std::uint32_t> VolumeSession::image(std::span<const float> scalars, const Camera& camera) {
  expect_view();
  if (cpu_) return cpu_->render(scalars, cpu_->classify(cpu_->ranges(scalars), *tf_, settings_), camera, *tf_, settings_);
  const Resident resident = prepared(scalars, true);
  gpu_->render(resident.scalars.pointer(), *resident.state, camera, resident.stream.handle());
  return gpu_->image(resident.stream.handle());
}

void VolumeSession::prepare_device(gpu::CUdeviceptr scalars, gpu::CUstream stream) {
  expect_view(), expect_gpu();
  if (!resident_) resident_ = gpu_->region_state();
  gpu_->ranges(scalars, *resident_, stream);
  gpu_->classify(*resident_, stream);
}

void VolumeSession::prepare_host(std::span<const float> scalars) {
  expect_view(), expect_cpu("prepare_host");
  expect_cells(scalars.size());
  host_ranges_ = cpu_->ranges(scalars);
  host_visible_ = cpu_->classify(host_ranges_, *tf_, settings_);
}

void VolumeSession::classify(gpu::CUstream stream) {
  expect_prepared();
  if (gpu_)
    gpu_->classify(*resident_, stream);
  else
    host_visible_ = cpu_->classify(host_ranges_, *tf_, settings_);
}

std::vector<std::uint32_t> VolumeSession::render_device(gpu::CUdeviceptr scalars, const Camera& camera, gpu::CUstream stream) {
  expect_prepared(), expect_gpu();
  gpu_->render(scalars, *resident_, camera, stream);
  return gpu_->image(stream);
}

std::vector<std::uint32_t> VolumeSession::render_host(std::span<const float> scalars, const Camera& camera) {
  expect_prepared(), expect_cpu("render_host");
  expect_cells(scalars.size());
  return cpu_->render(scalars, host_visible_, camera, *tf_, settings_);
}

void VolumeSession::share_slab(RegionSlab slab, std::span<const ElementRun> held) {
  VolumeTopology sliced = topology_.slab(slab, held);
  const int ordinal = device();
  gpu_.reset(), resident_.reset(), host_ranges_.clear(), host_visible_.clear();
  topology_ = std::move(sliced);
  if (ordinal >= 0) {
    gpu_.emplace(ordinal, topology_);
    if (tf_) gpu_->set_transfer_function(*tf_, settings_);
  }
}

std::vector<float> VolumeSession::render_layer_device(gpu::CUdeviceptr scalars, const Camera& camera, gpu::CUstream stream) {
  draw_layer_device(scalars, camera, stream);
  return gpu_->layer(stream);
}

void VolumeSession::draw_layer_device(gpu::CUdeviceptr scalars, const Camera& camera, gpu::CUstream stream) {
  expect_prepared(), expect_gpu();
  gpu_->render_layer(scalars, *resident_, camera, stream);
}

gpu::CUdeviceptr VolumeSession::layer_pointer() const {
  expect_gpu();
  return gpu_->layer_pointer();
}

std::vector<float> VolumeSession::render_layer_host(std::span<const float> scalars, const Camera& camera) {
  expect_prepared(), expect_cpu("render_layer_host");
  expect_cells(scalars.size());
  return cpu_->render_layer(scalars, host_visible_, camera, *tf_, settings_);
}

PlayResult VolumeSession::play(engine::Queue* queue, PlayOptions options) {
  expect_view();
  options.field = field_, options.tf = *tf_, options.settings = settings_;
  if (cpu_) return volume::play(container_, topology_, *cpu_, queue, options);
  return volume::play(container_, topology_, *gpu_, queue, options);
}

double VolumeSession::render_only_seconds(const Camera& camera, std::uint32_t frame, unsigned repeats) {
  expect_view();
  PlayOptions options;
  options.field = field_, options.tf = *tf_, options.settings = settings_, options.camera = camera;
  HEADRACE_EXPECT(frame < container_.frames().size(), UsageError, container_.path() + ": no frame " + std::to_string(frame));
  if (cpu_) return volume::render_only_seconds(container_, topology_, *cpu_, options, frame, repeats);
  return volume::render_only_seconds(container_, topology_, *gpu_, options, frame, repeats);
}

VolumeSession::Resident VolumeSession::prepared(std::span<const float> scalars, bool classify) {
  expect_cells(scalars.size());
  gpu_->make_current();
  Resident r{gpu::Stream(), gpu::DeviceBuffer(std::max<std::size_t>(scalars.size_bytes(), 4)), gpu_->region_state()};
  gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(r.scalars.pointer(), scalars.data(), scalars.size_bytes(), r.stream.handle()),
             "cuMemcpyHtoDAsync");
  gpu_->ranges(r.scalars.pointer(), *r.state, r.stream.handle());
  if (classify) gpu_->classify(*r.state, r.stream.handle());
  r.stream.synchronize();  // the copy reads the caller's array
  return r;
}

void VolumeSession::expect_view() const { HEADRACE_EXPECT(tf_.has_value(), UsageError, "set_view() first: a transfer function"); }

void VolumeSession::expect_gpu() const {
  HEADRACE_EXPECT(gpu_.has_value(), UsageError, "a frame in GPU memory needs a GPU renderer; this one is the CPU reference");
}

void VolumeSession::expect_cpu(const char* call) const {
  HEADRACE_EXPECT(cpu_.has_value(), UsageError, std::string(call) + " renders with the CPU reference; this renderer is a GPU's");
}

void VolumeSession::expect_prepared() const {
  HEADRACE_EXPECT(resident_.has_value() || !host_ranges_.empty(), UsageError, "prepare a resident frame first");
}

void VolumeSession::expect_cells(std::size_t cells) const {
  HEADRACE_EXPECT(cells == topology_.cell_count(), UsageError,
                  "a frame holds " + std::to_string(topology_.cell_count()) + " cells, got " + std::to_string(cells));
}

}  // namespace headrace::workloads::volume
