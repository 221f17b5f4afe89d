#include "headrace/codec/gpu/decoder_pool.hpp"

#include <algorithm>

#include "headrace/codec/gpu/batched_encoder.hpp"
#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::codec::gpu {
namespace {

// One chunk of the stage, encoded on the CPU when it can, else by nvCOMP on the GPU.
std::vector<std::byte> sample_chunk(const CodecStage& stage, const std::vector<std::byte>& raw, int device) {
  if (stage.cpu_encodes(nullptr)) return stage.encode(raw);
  const std::span<const std::byte> chunk(raw);
  const auto blocks = stage.raw_blocks(chunk);
  BatchedEncoder encoder(stage, device, blocks.size(), blocks.front().size());
  return encode_chunks(encoder, stage, {&chunk, 1}).front();
}

// Decodes one small chunk on a stream and in memory of its own: nvCOMP's kernels load here, and a
// decoder that decodes wrong fails here, naming the stage.
void check_on_one_chunk(const CodecStage& stage, DecoderPool::Pooled& pooled, int device) {
  std::vector<std::byte> raw(4096);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = std::byte(i % 7);
  if (!stage.cpu_encodes(nullptr) && !gpu_encoder_available(stage, nullptr)) return;  // nothing encodes a sample
  const auto stored = sample_chunk(stage, raw, device);
  const auto stored_room = format::layout::align_up(stored.size());
  const headrace::gpu::DeviceBuffer memory(stored_room + raw.size());
  const headrace::gpu::Stream stream;
  const headrace::gpu::CUdeviceptr input = memory.pointer();
  const headrace::gpu::CUdeviceptr output = input + stored_room;
  headrace::gpu::check(headrace::gpu::driver()->cuMemcpyHtoDAsync(input, stored.data(), stored.size(), stream.handle()),
                       "cuMemcpyHtoDAsync");
  const std::string label = "check " + pooled.coding.name + " chunk";
  std::vector<DecodeItem> items;
  for (const auto& block : stage.blocks(stored, raw.size(), label))
    items.push_back({input + block.stored_offset, block.stored_size, output + block.raw_offset, block.raw_size});
  pooled.decoder.decode_async(items, stream.handle());
  pooled.decoder.check(std::vector<std::string>(items.size(), label));
  std::vector<std::byte> back(raw.size());
  headrace::gpu::copy_to_host(back.data(), output, back.size());
  stream.synchronize();
  HEADRACE_EXPECT(back == raw, CodecError, label + ": the GPU decoded other bytes than were encoded");
}

}  // namespace

DecoderPool::DecoderPool(int device, std::size_t decoders_per_coding, const BatchedDecoderLimits& limits)
    : device_(device), per_coding_(decoders_per_coding), limits_(limits) {}

std::string DecoderPool::prepare(const CodecStage& stage) {
  const NvcompCoding coding = NvcompCoding::of(stage);
  std::lock_guard lock(prepare_mutex_);
  if (const auto known = prepared_.find(coding); known != prepared_.end()) return known->second;
  std::string why;
  if (gpu_decoder_available(coding, &why)) {
    std::vector<std::shared_ptr<Pooled>> made;
    for (std::size_t k = 0; k < per_coding_; ++k) {
      made.push_back(std::make_shared<Pooled>(Pooled{coding, BatchedDecoder(coding, limits_)}));
      check_on_one_chunk(stage, *made.back(), device_);
    }
    std::lock_guard idle(idle_mutex_);
    for (auto& decoder : made) idle_.push_back(std::move(decoder));
  }
  prepared_[coding] = why;
  return why;
}

std::shared_ptr<DecoderPool::Pooled> DecoderPool::take(const NvcompCoding& coding) {
  std::unique_lock lock(idle_mutex_);
  const auto of_coding = [&](const auto& d) { return d->coding == coding; };
  returned_.wait(lock, [&] { return std::any_of(idle_.begin(), idle_.end(), of_coding); });
  const auto it = std::find_if(idle_.begin(), idle_.end(), of_coding);
  auto decoder = *it;
  idle_.erase(it);
  return decoder;
}

void DecoderPool::give_back(std::shared_ptr<Pooled> decoder) {
  {
    std::lock_guard lock(idle_mutex_);
    idle_.push_back(std::move(decoder));
  }
  returned_.notify_all();
}

std::string DecoderPool::prepare_filters() {
  std::lock_guard lock(prepare_mutex_);
  if (filters_prepared_) return *filters_prepared_;
  try {
    kernels_.emplace(device_);
    std::vector<std::shared_ptr<headrace::gpu::DeviceBuffer>> spares;
    for (std::size_t k = 0; k < per_coding_; ++k)
      // A batch's raw bytes, each chunk at a 256-byte offset.
      spares.push_back(std::make_shared<headrace::gpu::DeviceBuffer>(limits_.max_total_raw_bytes + limits_.max_chunks * 256));
    std::lock_guard idle(idle_mutex_);
    idle_spares_ = std::move(spares);
    filters_prepared_ = "";
  } catch (const UnavailableError& error) {
    kernels_.reset();
    filters_prepared_ = error.what();
  }
  return *filters_prepared_;
}

std::shared_ptr<headrace::gpu::DeviceBuffer> DecoderPool::take_spare() {
  std::unique_lock lock(idle_mutex_);
  returned_.wait(lock, [&] { return !idle_spares_.empty(); });
  auto spare = std::move(idle_spares_.back());
  idle_spares_.pop_back();
  return spare;
}

void DecoderPool::give_back_spare(std::shared_ptr<headrace::gpu::DeviceBuffer> spare) {
  {
    std::lock_guard lock(idle_mutex_);
    idle_spares_.push_back(std::move(spare));
  }
  returned_.notify_all();
}

}  // namespace headrace::codec::gpu
