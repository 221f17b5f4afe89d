#include "headrace/codec/chain_trial.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "headrace/codec/gpu/batched_encoder.hpp"
#include "headrace/codec/gpu/chain_decoding.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::codec {
namespace {

std::vector<std::vector<std::byte>> encode_all(const Chain& chain, std::span<const std::span<const std::byte>> chunks, int device) {
  std::vector<std::vector<std::byte>> stored(chunks.size());
  if (chain.cpu_encodes(nullptr)) {
    detail::parallel_for(chunks.size(), 0, [&](std::uint64_t i) { stored[i] = chain.encode(chunks[i]); });
    return stored;
  }
  std::vector<std::vector<std::byte>> filtered(chunks.size());
  std::vector<std::span<const std::byte>> inputs;
  std::size_t largest = 0, blocks = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    filtered[i] = chain.filter(chunks[i]);
    inputs.emplace_back(filtered[i]);
    for (const auto block : chain.codec()->raw_blocks(filtered[i])) largest = std::max(largest, block.size());
    blocks += chain.codec()->raw_blocks(filtered[i]).size();
  }
  gpu::BatchedEncoder encoder(*chain.codec(), std::max(device, 0), std::min<std::size_t>(blocks, 4096), largest);
  return gpu::encode_chunks(encoder, *chain.codec(), inputs);
}

void expect_same(std::span<const std::byte> raw, std::span<const std::byte> decoded, const Chain& chain, std::size_t i,
                 const char* where) {
  HEADRACE_EXPECT(std::equal(raw.begin(), raw.end(), decoded.begin(), decoded.end()), CodecError,
                  "chain " + chain.spec() + ": sample chunk " + std::to_string(i) + " decoded " + where + " to other bytes");
}

double decode_on_cpu(const Chain& chain, std::span<const std::span<const std::byte>> chunks,
                     const std::vector<std::vector<std::byte>>& stored, int repeats, std::string& decoded_on) {
  std::vector<std::vector<std::byte>> out(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) out[i].resize(chunks[i].size());
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    const auto start = detail::SteadyClock::now();
    detail::parallel_for(chunks.size(), 0, [&](std::uint64_t i) {
      chain.decode(stored[i], out[i], "sample chunk " + std::to_string(i));
    });
    best = std::min(best, detail::seconds_since(start));
  }
  for (std::size_t i = 0; i < chunks.size(); ++i) expect_same(chunks[i], out[i], chain, i, "on the CPU");
  decoded_on = "cpu: " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads";
  return best;
}

double decode_on_gpu(const Chain& chain, std::span<const std::span<const std::byte>> chunks,
                     const std::vector<std::vector<std::byte>>& stored, int device, int repeats, std::uint64_t batch_bytes,
                     std::string& decoded_on) {
  namespace cuda = headrace::gpu;
  const cuda::Device gpu_device(device);
  // The sample's stored chunks once in device memory; the batch names them in turn until it holds
  // batch_bytes of raw bytes (at least each once), each decoding into its own place.
  std::uint64_t stored_total = 0, sample_raw = 0;
  std::vector<std::uint64_t> stored_at;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    stored_at.push_back(stored_total);
    stored_total += format::layout::align_up(stored[i].size());
    sample_raw += chunks[i].size();
  }
  const std::size_t copies = static_cast<std::size_t>(std::max<std::uint64_t>(1, batch_bytes / std::max<std::uint64_t>(1, sample_raw)));
  const std::size_t count = chunks.size() * copies;
  const cuda::DeviceBuffer stored_memory(stored_total);
  const cuda::Stream stream;
  for (std::size_t i = 0; i < chunks.size(); ++i)
    cuda::check(cuda::driver()->cuMemcpyHtoDAsync(stored_memory.pointer() + stored_at[i], stored[i].data(), stored[i].size(),
                                                  stream.handle()),
                "cuMemcpyHtoDAsync");
  std::uint64_t raw_total = 0;
  for (std::size_t k = 0; k < count; ++k) raw_total += format::layout::align_up(chunks[k % chunks.size()].size());
  const cuda::DeviceBuffer raw_memory(raw_total);
  std::vector<gpu::ChainChunk> batch_chunks;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < chunks.size(); ++i) labels.push_back("chain " + chain.spec() + ": sample chunk " + std::to_string(i));
  for (std::uint64_t k = 0, raw_at = 0; k < count; ++k) {
    const std::size_t i = k % chunks.size();
    batch_chunks.push_back({stored_memory.pointer() + stored_at[i], stored[i], raw_memory.pointer() + raw_at, chunks[i].size(), &chain,
                            labels[i]});
    raw_at += format::layout::align_up(chunks[i].size());
  }
  const gpu::ChainBatch batch = gpu::plan_chain_batch(batch_chunks);
  std::size_t largest_item = 0;
  for (const auto& item : batch.items) largest_item = std::max<std::size_t>(largest_item, item.raw_size);
  gpu::BatchedDecoder decoder(gpu::NvcompCoding::of(*chain.codec()), {batch.items.size(), largest_item, raw_total});
  std::optional<gpu::FilterKernels> kernels;
  if (!chain.filters().empty()) kernels.emplace(device);
  const cuda::DeviceBuffer spare(batch.spare_bytes > 0 ? batch.spare_bytes : 1);
  stream.synchronize();
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats + 1; ++r) {  // the first round loads nvCOMP's kernels: not timed
    cuda::Event started(true), finished(true);
    started.record(stream.handle());
    gpu::decode_chains_async(decoder, kernels ? &*kernels : nullptr, batch_chunks, batch, spare.pointer(), stream.handle());
    finished.record(stream.handle());
    decoder.check(batch.labels);  // waits for nvCOMP; the filter kernels run after it
    finished.synchronize();
    if (r > 0) best = std::min(best, finished.elapsed_ms_since(started) / 1e3);
  }
  for (std::size_t k = 0; k < count; k += chunks.size() * std::max<std::size_t>(1, copies / 2)) {
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      std::vector<std::byte> back(chunks[i].size());
      cuda::copy_to_host(back.data(), batch_chunks[k + i].raw, back.size());
      expect_same(chunks[i], back, chain, i, "on the GPU");
    }
  }
  decoded_on = "gpu " + std::to_string(device) + ": nvCOMP" + (chain.filters().empty() ? "" : " + filter kernels") + ", " +
               std::to_string(count) + " chunks (" + std::to_string(batch.items.size()) + " blocks) a batch";
  return best * static_cast<double>(sample_raw) / static_cast<double>(sample_raw * copies);
}

}  // namespace

ChainTrial try_chain(const Chain& chain, std::span<const std::span<const std::byte>> chunks, int device, int repeats,
                     std::uint64_t gpu_batch_bytes) {
  HEADRACE_EXPECT(!chain.empty() && !chunks.empty() && repeats >= 1, UsageError, "try_chain: a chain, chunks and repeats >= 1");
  ChainTrial trial;
  const auto start = detail::SteadyClock::now();
  const auto stored = encode_all(chain, chunks, device);
  trial.encode_seconds = detail::seconds_since(start);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    trial.raw_bytes += chunks[i].size();
    trial.stored_bytes += stored[i].size();
  }
  trial.decode_seconds = device >= 0 ? decode_on_gpu(chain, chunks, stored, device, repeats, gpu_batch_bytes, trial.decoded_on)
                                     : decode_on_cpu(chain, chunks, stored, repeats, trial.decoded_on);
  return trial;
}

}  // namespace headrace::codec
