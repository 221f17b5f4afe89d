#include "headrace/codec/chain_writer.hpp"

#include <map>
#include <mutex>

#include "headrace/codec/gpu/batched_encoder.hpp"
#include "headrace/error.hpp"

namespace headrace::codec {

struct ChainEncoder::State {
  int device;
  std::mutex mutex;
  std::vector<std::shared_ptr<const Chain>> chains;  // per field; null: stored as it is
  // Chains whose codec only a GPU encodes: one nvCOMP encoder per codec, made on first use and sized for
  // the largest chunk so far; the writer's threads take turns.
  std::mutex gpu_mutex;
  std::map<std::string, std::pair<std::size_t, std::unique_ptr<gpu::BatchedEncoder>>> gpu_encoders;

  std::vector<std::byte> encode_on_gpu(const CodecStage& stage, std::span<const std::byte> raw) {
    std::lock_guard lock(gpu_mutex);
    // Room for a chunk's blocks, or the chunk itself without blocks.
    const std::size_t block = stage.block_bytes() ? stage.block_bytes() : raw.size();
    const std::size_t blocks = (raw.size() + block - 1) / block;
    auto& [capacity, encoder] = gpu_encoders[stage.spec()];
    if (!encoder || capacity < block || encoder->max_chunks() < blocks) {
      encoder = std::make_unique<gpu::BatchedEncoder>(stage, device, std::max<std::size_t>(blocks, 64), block);
      capacity = block;
    }
    return std::move(gpu::encode_chunks(*encoder, stage, {&raw, 1}).front());
  }
};

format::FieldCoding field_coding(const Chain& chain) {
  format::FieldCoding coding;
  coding.codec = chain.record_codec();
  if (coding.codec == format::CodecId::chain) coding.chain = chain.spec();
  coding.error_bound = chain.error_bound();
  if (chain.codec() != nullptr) coding.max_chunk_bytes = chain.codec()->max_raw_chunk_bytes();
  return coding;
}

ChainEncoder::ChainEncoder(std::size_t fields, int device) : state_(std::make_shared<State>()) {
  state_->device = device;
  state_->chains.resize(fields);
}

format::FieldCoding ChainEncoder::use(std::uint32_t field, Chain chain) {
  HEADRACE_EXPECT(field < state_->chains.size(), UsageError, "ChainEncoder: field " + std::to_string(field) + " out of range");
  std::string why, no_gpu;
  HEADRACE_EXPECT(chain.empty() || chain.cpu_encodes(&why) || gpu::gpu_encoder_available(*chain.codec(), &no_gpu),
                  UnavailableError, "chain " + chain.spec() + " cannot be encoded here: " + why + "; and on a GPU: " + no_gpu);
  format::FieldCoding coding = field_coding(chain);
  std::lock_guard lock(state_->mutex);
  state_->chains[field] = chain.empty() ? nullptr : std::make_shared<const Chain>(std::move(chain));
  return coding;
}

format::ChunkEncoder ChainEncoder::encoder() const {
  return [state = state_](std::uint32_t field, std::span<const std::byte> raw) {
    std::shared_ptr<const Chain> chain;
    {
      std::lock_guard lock(state->mutex);
      chain = state->chains.at(field);
    }
    HEADRACE_EXPECT(chain != nullptr, UsageError, "ChainEncoder: field " + std::to_string(field) + " has no chain");
    if (chain->codec()->cpu_encodes(nullptr)) return chain->encode(raw);
    return state->encode_on_gpu(*chain->codec(), chain->filter(raw));
  };
}

void store_fields_with(format::WriterOptions& options, std::vector<Chain> chains, int device) {
  ChainEncoder encoder(chains.size(), device);
  options.codings.clear();
  for (std::uint32_t i = 0; i < chains.size(); ++i) options.codings.push_back(encoder.use(i, std::move(chains[i])));
  options.encoder = encoder.encoder();
}

}  // namespace headrace::codec
