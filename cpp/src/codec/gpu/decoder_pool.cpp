#include "headrace/codec/gpu/decoder_pool.hpp"

#include <algorithm>

#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::codec::gpu {
namespace {

// Decodes one small chunk on a stream and in memory of its own: nvCOMP's kernels load here, and a
// decoder that decodes wrong fails here, naming the codec.
void check_on_one_chunk(DecoderPool::Pooled& pooled) {
  if (pooled.codec == format::CodecId::gdeflate && !cpu::gdeflate_available(nullptr)) return;  // nothing encodes a sample
  std::vector<std::byte> raw(4096);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = std::byte(i % 7);
  const auto stored = cpu::encode(pooled.codec, 0, raw);
  const auto stored_room = format::layout::align_up(stored.size());
  const headrace::gpu::DeviceBuffer memory(stored_room + raw.size());
  const headrace::gpu::Stream stream;
  const headrace::gpu::CUdeviceptr input = memory.pointer();
  const headrace::gpu::CUdeviceptr output = input + stored_room;
  headrace::gpu::check(headrace::gpu::driver()->cuMemcpyHtoDAsync(input, stored.data(), stored.size(), stream.handle()),
                       "cuMemcpyHtoDAsync");
  const DecodeItem item{input, stored.size(), output, raw.size()};
  pooled.decoder.decode_async({&item, 1}, stream.handle());
  const std::string label = std::string("check ") + format::to_string(pooled.codec) + " chunk";
  pooled.decoder.check({&label, 1});
  std::vector<std::byte> back(raw.size());
  headrace::gpu::copy_to_host(back.data(), output, back.size());
  stream.synchronize();
  HEADRACE_EXPECT(back == raw, CodecError, label + ": the GPU decoded other bytes than the CPU encoded");
}

}  // namespace

DecoderPool::DecoderPool(std::size_t decoders_per_codec, const BatchedDecoderLimits& limits)
    : per_codec_(decoders_per_codec), limits_(limits) {}

std::string DecoderPool::prepare(format::CodecId codec) {
  std::lock_guard lock(prepare_mutex_);
  if (const auto known = prepared_.find(codec); known != prepared_.end()) return known->second;
  std::string why;
  if (gpu_decoder_available(codec, &why)) {
    std::vector<std::shared_ptr<Pooled>> made;
    for (std::size_t k = 0; k < per_codec_; ++k) {
      made.push_back(std::make_shared<Pooled>(Pooled{codec, BatchedDecoder(codec, limits_)}));
      check_on_one_chunk(*made.back());
    }
    std::lock_guard idle(idle_mutex_);
    for (auto& decoder : made) idle_.push_back(std::move(decoder));
  }
  prepared_[codec] = why;
  return why;
}

std::shared_ptr<DecoderPool::Pooled> DecoderPool::take(format::CodecId codec) {
  std::unique_lock lock(idle_mutex_);
  const auto of_codec = [&](const auto& d) { return d->codec == codec; };
  returned_.wait(lock, [&] { return std::any_of(idle_.begin(), idle_.end(), of_codec); });
  const auto it = std::find_if(idle_.begin(), idle_.end(), of_codec);
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

}  // namespace headrace::codec::gpu
