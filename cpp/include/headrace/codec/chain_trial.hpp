// A chain tried on sample chunks (issue 19's automatic choice, `headrace compress --auto`): how small it
// stores them and how fast they decode where a reader decodes them, every chunk checked to decode to its
// raw bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "headrace/codec/chain.hpp"

namespace headrace::codec {

struct ChainTrial {
  std::uint64_t raw_bytes = 0, stored_bytes = 0;
  double encode_seconds = 0;  // on the CPU (the codec on the GPU for the codecs only a GPU encodes)
  double decode_seconds = 0;  // the fastest of the repeats, for raw_bytes (the sample, whatever the batch)
  std::string decoded_on;     // "gpu 0: nvCOMP + filter kernels" or "cpu: N threads"
  [[nodiscard]] double stored_fraction() const noexcept {
    return raw_bytes ? static_cast<double>(stored_bytes) / static_cast<double>(raw_bytes) : 1.0;
  }
  [[nodiscard]] double decode_bytes_per_second() const noexcept {
    return decode_seconds > 0 ? static_cast<double>(raw_bytes) / decode_seconds : 0.0;
  }
};

// Encodes the chunks and decodes them `repeats` times: on GPU `device` (nvCOMP's batched decoder and the
// filter kernels on one stream, timed by CUDA events) when device >= 0, else on the CPU, chunks in
// parallel on every core. A GPU decodes a batch of `gpu_batch_bytes` raw bytes at once, as the engine
// decodes a frame's chunks (the sample chunks repeated; nvCOMP decodes chunks in parallel, so a batch of
// four chunks would measure a quarter of a GPU); the rate is of the batch. Throws CodecError when a chunk
// decodes to other bytes, UnavailableError when the chain cannot be encoded or decoded there.
inline constexpr std::uint64_t trial_gpu_batch_bytes = std::uint64_t{256} << 20;
[[nodiscard]] ChainTrial try_chain(const Chain& chain, std::span<const std::span<const std::byte>> chunks, int device,
                                   int repeats = 3, std::uint64_t gpu_batch_bytes = trial_gpu_batch_bytes);

}  // namespace headrace::codec
