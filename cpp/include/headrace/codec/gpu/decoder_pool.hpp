// The GPU decoders a stream of batches needs, made once per codec and shared: a batch takes an idle
// decoder of its codec and gives it back when its GPU work has finished, so nothing is allocated on the
// data path. A codec's decoders are made the first time it is asked for (nvCOMP's kernels loaded then,
// not while a batch waits), each checked on one chunk the CPU encoded.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "headrace/codec/gpu/batched_decoder.hpp"

namespace headrace::codec::gpu {

class DecoderPool {
 public:
  struct Pooled {
    format::CodecId codec;
    BatchedDecoder decoder;
  };

  // decoders_per_codec batches of one codec may be in flight at once, each within limits.
  DecoderPool(std::size_t decoders_per_codec, const BatchedDecoderLimits& limits);

  // Makes the codec's decoders if nobody has (the GPU's context current on the calling thread); returns
  // why nvCOMP cannot decode the codec here, or "" when it can. Throws CodecError when a decoder
  // decodes its check chunk wrong.
  std::string prepare(format::CodecId codec);
  // An idle decoder of a prepared codec, waiting until one is given back.
  [[nodiscard]] std::shared_ptr<Pooled> take(format::CodecId codec);
  void give_back(std::shared_ptr<Pooled> decoder);

  [[nodiscard]] const BatchedDecoderLimits& limits() const noexcept { return limits_; }

 private:
  std::size_t per_codec_;
  BatchedDecoderLimits limits_;
  std::mutex prepare_mutex_;
  std::map<format::CodecId, std::string> prepared_;  // per codec asked for: why it cannot be decoded ("": it can)
  std::mutex idle_mutex_;
  std::condition_variable returned_;
  std::vector<std::shared_ptr<Pooled>> idle_;
};

}  // namespace headrace::codec::gpu
