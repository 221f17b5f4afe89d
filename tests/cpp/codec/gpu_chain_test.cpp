// Codec chains on a GPU (issue 19) against the CPU: every codec of nvCOMP, alone and behind filters,
// decoded on the GPU gives the raw bytes (lossy: the CPU decoder's bytes); what nvCOMP encodes on the GPU
// the CPU decodes, and the reverse; the trial of the automatic choice; and the engine streaming a file of
// chains into device memory. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "headrace/codec/chain.hpp"
#include "headrace/codec/chain_trial.hpp"
#include "headrace/codec/chain_writer.hpp"
#include "headrace/codec/chunk_reader.hpp"
#include "headrace/codec/gpu/batched_encoder.hpp"
#include "headrace/codec/gpu/chain_decoding.hpp"
#include "headrace/codec/gpu/filters.hpp"
#include "headrace/codec/registry.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/io/backend.hpp"
#include "support/temp_directory.hpp"

namespace headrace::codec {
namespace {

const ElementShape float1{format::DType::float32, 1, 128};

std::vector<float> smooth(std::size_t n, float phase) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(std::sin(0.03 * static_cast<double>(i % 128) + phase) * std::cos(0.002 * static_cast<double>(i)));
  return values;
}

// Every codec of the registry (a new one is tested without an edit here), in its configuration for
// these chunks where it needs one, then a few block sizes: one stream a chunk, small blocks.
std::vector<std::string> every_codec() {
  const std::map<std::string_view, std::string> configured = {{"gdeflate", "gdeflate(block=32768)"},
                                                              {"bitcomp_lossy", "bitcomp_lossy(error=0.0005)"}};
  std::vector<std::string> codecs;
  for (const auto& entry : stage_registry())
    if (entry.kind == StageKind::codec)
      codecs.push_back(configured.contains(entry.name) ? configured.at(entry.name) : std::string(entry.name));
  for (const char* blocks : {"zstd(block=0)", "ans(block=0)", "lz4(block=4096)"}) codecs.emplace_back(blocks);
  return codecs;
}

class GpuChain : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (headrace::gpu::device_count() == 0) GTEST_SKIP() << "no GPU";
    if (!gpu::gpu_decoder_available(gpu::NvcompCoding::of(*Chain::parse("lz4", float1).codec()), &why)) GTEST_SKIP() << why;
    device_.emplace(0);
    device_->make_current();
  }
  // Chunks of different sizes (a tail that is no whole bit-shuffle group, a chunk of one row).
  std::vector<std::vector<float>> chunks() const {
    return {smooth(65536, 0.1f), smooth(40000 + 3, 0.7f), smooth(128, 1.3f), smooth(16384 + 5, 2.0f)};
  }
  // Stored bytes of each chunk: the CPU encodes when it can, else nvCOMP on the GPU (filters on the CPU).
  static std::vector<std::vector<std::byte>> encode(const Chain& chain, const std::vector<std::vector<float>>& raw, bool on_gpu) {
    std::vector<std::vector<std::byte>> stored, filtered;
    for (const auto& values : raw) {
      const auto bytes = std::as_bytes(std::span<const float>(values));
      if (!on_gpu) {
        stored.push_back(chain.encode(bytes));
        continue;
      }
      filtered.push_back(chain.filter(bytes));
    }
    if (!on_gpu) return stored;
    std::vector<std::span<const std::byte>> inputs(filtered.begin(), filtered.end());
    std::size_t largest = 0;
    for (const auto& input : inputs)
      for (const auto block : chain.codec()->raw_blocks(input)) largest = std::max(largest, block.size());
    gpu::BatchedEncoder encoder(*chain.codec(), 0, 256, largest);
    return gpu::encode_chunks(encoder, *chain.codec(), inputs);
  }
  // Decodes the stored chunks on the GPU through the chain; returns each chunk's bytes.
  static std::vector<std::vector<std::byte>> decode_on_gpu(const Chain& chain, const std::vector<std::vector<std::byte>>& stored,
                                                           const std::vector<std::size_t>& raw_sizes) {
    std::uint64_t stored_total = 0, raw_total = 0;
    for (std::size_t i = 0; i < stored.size(); ++i) {
      stored_total += format::layout::align_up(stored[i].size());
      raw_total += format::layout::align_up(raw_sizes[i]);
    }
    const headrace::gpu::DeviceBuffer stored_memory(stored_total), raw_memory(raw_total);
    const headrace::gpu::Stream stream;
    std::vector<gpu::ChainChunk> chunks;
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < stored.size(); ++i) labels.push_back(chain.spec() + " chunk " + std::to_string(i));
    for (std::uint64_t i = 0, s = 0, r = 0; i < stored.size(); ++i) {
      headrace::gpu::check(headrace::gpu::driver()->cuMemcpyHtoDAsync(stored_memory.pointer() + s, stored[i].data(), stored[i].size(),
                                                                      stream.handle()),
                           "cuMemcpyHtoDAsync");
      chunks.push_back({stored_memory.pointer() + s, stored[i], raw_memory.pointer() + r, raw_sizes[i], &chain, labels[i]});
      s += format::layout::align_up(stored[i].size());
      r += format::layout::align_up(raw_sizes[i]);
    }
    const auto batch = gpu::plan_chain_batch(chunks);
    std::size_t largest = 0;
    for (const auto& item : batch.items) largest = std::max<std::size_t>(largest, item.raw_size);
    gpu::BatchedDecoder decoder(gpu::NvcompCoding::of(*chain.codec()), {batch.items.size(), largest, raw_total});
    std::optional<gpu::FilterKernels> kernels;
    if (!chain.filters().empty()) kernels.emplace(0);
    const headrace::gpu::DeviceBuffer spare(batch.spare_bytes ? batch.spare_bytes : 1);
    gpu::decode_chains_async(decoder, kernels ? &*kernels : nullptr, chunks, batch, spare.pointer(), stream.handle());
    decoder.check(batch.labels);
    stream.synchronize();  // the filter kernels run after nvCOMP, whose check() waited for it alone
    std::vector<std::vector<std::byte>> out;
    for (const auto& chunk : chunks) {
      out.emplace_back(chunk.raw_size);
      headrace::gpu::copy_to_host(out.back().data(), chunk.raw, chunk.raw_size);
    }
    return out;
  }
  std::optional<headrace::gpu::Device> device_;
};

TEST_F(GpuChain, EveryNvcompCodecAloneAndBehindFiltersDecodesOnTheGpuAsOnTheCpu) {
  const auto raw = chunks();
  std::vector<std::size_t> sizes;
  for (const auto& values : raw) sizes.push_back(values.size() * sizeof(float));
  std::size_t checked = 0;
  for (const std::string& codec : every_codec()) {
    const bool lossy = codec.starts_with("bitcomp_lossy");
    for (const std::string filters : {"", "split(components=1)|", "shuffle|", "bitshuffle|", "delta|", "xor|shuffle|",
                                      "split(components=1)|bitshuffle|delta|"}) {
      if (lossy && !filters.empty() && filters != "split(components=1)|") continue;
      const Chain chain = Chain::parse(filters + codec, float1);
      const bool cpu = chain.cpu_encodes(nullptr);
      const std::vector<std::vector<float>>& usable = raw;  // gdeflate too: its 64 KiB blocks make any chunk
      std::vector<std::size_t> usable_sizes;
      for (const auto& values : usable) usable_sizes.push_back(values.size() * sizeof(float));
      const auto stored = encode(chain, usable, !cpu);
      const auto decoded = decode_on_gpu(chain, stored, usable_sizes);
      for (std::size_t i = 0; i < usable.size(); ++i) {
        const auto expected = std::as_bytes(std::span<const float>(usable[i]));
        if (lossy) {
          std::vector<std::byte> on_cpu(expected.size());
          chain.decode(stored[i], on_cpu, "chunk");
          EXPECT_EQ(decoded[i], on_cpu) << chain.spec() << " chunk " << i << ": the GPU and the CPU decode alike";
          std::vector<float> values(usable[i].size());
          std::memcpy(values.data(), decoded[i].data(), decoded[i].size());
          for (std::size_t k = 0; k < values.size(); ++k)
            ASSERT_LE(std::abs(values[k] - usable[i][k]), 0.0005 * (1 + 1e-6)) << chain.spec() << " value " << k;
        } else {
          EXPECT_TRUE(std::equal(expected.begin(), expected.end(), decoded[i].begin(), decoded[i].end()))
              << chain.spec() << " chunk " << i;
        }
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 70u);
}

// The CPU decoders give what nvCOMP's GPU encoders wrote: a file written on a GPU machine reads anywhere.
TEST_F(GpuChain, CpuDecodersReadWhatTheGpuEncoded) {
  for (const std::string codec : {"lz4", "snappy", "zstd", "deflate", "bitcomp"}) {
    const Chain chain = Chain::parse("shuffle|" + codec, float1);
    const auto raw = chunks();
    const auto stored = encode(chain, raw, true);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const auto expected = std::as_bytes(std::span<const float>(raw[i]));
      std::vector<std::byte> out(expected.size());
      chain.decode(stored[i], out, "chunk");
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.begin())) << chain.spec() << " chunk " << i;
    }
  }
}

TEST_F(GpuChain, TrialOnTheGpuMeasuresAndChecks) {
  const auto raw = chunks();
  std::vector<std::span<const std::byte>> views;
  for (const auto& values : raw) views.push_back(std::as_bytes(std::span<const float>(values)));
  const auto shuffled = try_chain(Chain::parse("shuffle|zstd", float1), views, 0, 2);
  const auto plain = try_chain(Chain::parse("zstd", float1), views, 0, 2);
  EXPECT_EQ(shuffled.raw_bytes, plain.raw_bytes);
  EXPECT_LT(shuffled.stored_bytes, plain.stored_bytes);
  EXPECT_GT(shuffled.decode_bytes_per_second(), 0);
  EXPECT_NE(shuffled.decoded_on.find("gpu 0"), std::string::npos) << shuffled.decoded_on;
  const auto ans = try_chain(Chain::parse("ans", float1), views, 0, 2);  // encoded by nvCOMP on the GPU
  EXPECT_LT(ans.stored_bytes, ans.raw_bytes);
}

// The engine reads a file of chains into device memory, decoding on the GPU, and on the CPU when asked.
TEST_F(GpuChain, TheEngineStreamsAFileOfChainsIntoDeviceMemory) {
  testing::TempDirectory dir;
  const std::string path = dir.file("chains.hrc");
  const std::vector<std::string> texts = {"shuffle|zstd", "split|bitshuffle|lz4", "delta|shuffle|deflate", "ans", "cascaded"};
  std::vector<format::FieldInfo> fields;
  std::vector<Chain> chains;
  for (std::size_t f = 0; f < texts.size(); ++f) {
    const std::uint32_t components = f == 1 ? 3 : 1;
    fields.push_back({"f" + std::to_string(f), format::DType::float32, components});
    chains.push_back(Chain::parse(texts[f], ElementShape{format::DType::float32, components, 128}));
  }
  std::vector<std::vector<float>> values;
  {
    format::WriterOptions options;
    options.chunk_size_bytes = 64 << 10;
    store_fields_with(options, chains);
    format::ContainerWriter writer(path, fields, options);
    const auto frame = writer.add_frame(0, std::nullopt);
    for (std::size_t f = 0; f < texts.size(); ++f) {
      values.push_back(smooth(fields[f].components * 50000, static_cast<float>(f)));
      writer.write_field(frame, static_cast<std::uint32_t>(f), std::as_bytes(std::span<const float>(values.back())));
    }
    writer.close();
  }
  const auto container = format::Container::open(path);
  EXPECT_EQ(container.version_minor(), 3u);
  for (const bool on_gpu : {true, false}) {
    engine::QueueOptions options;
    options.backend = io::BackendKind::posix;
    options.device = 0;
    options.staging_bytes = 4 << 20;
    options.decode_on_gpu = on_gpu;
    engine::Queue queue(options);
    const auto file = queue.add_file(path);
    for (std::uint32_t f = 0; f < texts.size(); ++f) {
      const bool gpu_only = !chains[f].cpu_decodes(nullptr);
      const headrace::gpu::DeviceBuffer out(values[f].size() * sizeof(float));
      std::vector<queue::RequestId> ids;
      bool refused = false;
      std::uint64_t k = 0;
      for (const auto& chunk : container.chunks_of(0, f)) {
        auto r = queue::chunk_request(file, chunk, {queue::MemoryKind::device, out.pointer() + chunk.first_element * fields[f].element_bytes(),
                                                    chunk.raw_size});
        r.label = queue::chunk_label(container, 0, f, k++, chunk);
        try {
          ids.push_back(queue.enqueue(std::move(r)));
        } catch (const UnavailableError& error) {  // decode_on cpu and a codec only a GPU decodes
          EXPECT_TRUE(gpu_only && !on_gpu) << error.what();
          EXPECT_NE(std::string(error.what()).find("no CPU decoder"), std::string::npos) << error.what();
          refused = true;
          break;
        }
      }
      if (refused) continue;
      const auto fence = queue.enqueue_signal();
      queue.submit();
      queue.wait(fence);
      for (const auto id : ids) ASSERT_EQ(queue.status(id).state, queue::RequestState::done) << queue.status(id).message;
      std::vector<float> got(values[f].size());
      headrace::gpu::copy_to_host(got.data(), out.pointer(), out.size_bytes());
      EXPECT_EQ(got, values[f]) << texts[f] << (on_gpu ? " on the GPU" : " on the CPU");
    }
  }
}

}  // namespace
}  // namespace headrace::codec
