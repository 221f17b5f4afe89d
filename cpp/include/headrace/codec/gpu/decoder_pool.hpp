// The GPU decoders a stream of batches needs, made once per coding and shared: a batch takes an idle
// decoder of its coding and gives it back when its GPU work has finished, so nothing is allocated on the
// data path. A coding's decoders are made the first time it is asked for (nvCOMP's kernels loaded then,
// not while a batch waits), each checked on one chunk encoded on the CPU (or by nvCOMP on the GPU for
// the codecs only a GPU encodes). Chains with filters also take a spare buffer of a batch's raw bytes,
// where the codec decodes before the filters are undone into the destinations.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "headrace/codec/gpu/batched_decoder.hpp"
#include "headrace/codec/gpu/filters.hpp"

namespace headrace::codec::gpu {

class DecoderPool {
 public:
  struct Pooled {
    NvcompCoding coding;
    BatchedDecoder decoder;
  };

  // decoders_per_coding batches of one coding may be in flight at once on GPU `device`, each within limits.
  DecoderPool(int device, std::size_t decoders_per_coding, const BatchedDecoderLimits& limits);

  // Makes the stage's decoders if nobody has (the GPU's context current on the calling thread); returns
  // why nvCOMP cannot decode it here, or "" when it can. Throws CodecError when a decoder decodes its
  // check chunk wrong.
  std::string prepare(const CodecStage& stage);
  // An idle decoder of a prepared coding, waiting until one is given back.
  [[nodiscard]] std::shared_ptr<Pooled> take(const NvcompCoding& coding);
  void give_back(std::shared_ptr<Pooled> decoder);

  // The filter kernels and the spare buffers (as many as decoders of one coding), made on the first
  // call; returns why the filters cannot be undone on this GPU, or "".
  std::string prepare_filters();
  [[nodiscard]] const FilterKernels& filter_kernels() const { return *kernels_; }
  [[nodiscard]] std::shared_ptr<headrace::gpu::DeviceBuffer> take_spare();
  void give_back_spare(std::shared_ptr<headrace::gpu::DeviceBuffer> spare);

  [[nodiscard]] const BatchedDecoderLimits& limits() const noexcept { return limits_; }

 private:
  int device_;
  std::size_t per_coding_;
  BatchedDecoderLimits limits_;
  std::mutex prepare_mutex_;
  std::map<NvcompCoding, std::string> prepared_;  // per coding asked for: why it cannot be decoded ("": it can)
  std::optional<std::string> filters_prepared_;   // why filters cannot be undone ("": they can)
  std::optional<FilterKernels> kernels_;
  std::mutex idle_mutex_;
  std::condition_variable returned_;
  std::vector<std::shared_ptr<Pooled>> idle_;
  std::vector<std::shared_ptr<headrace::gpu::DeviceBuffer>> idle_spares_;
};

}  // namespace headrace::codec::gpu
