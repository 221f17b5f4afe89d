#include "headrace/codec/gpu/batched_encoder.hpp"

#include <algorithm>

#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::codec::gpu {
namespace {

namespace cuda = headrace::gpu;

const shim::NvcompCompressApi* compress_api(const CodecStage& stage, std::string* why) {
  const shim::Nvcomp* library = shim::nvcomp();
  if (library == nullptr) {
    if (why != nullptr) *why = shim::why_no_nvcomp();
    return nullptr;
  }
  return library->compress_api(stage.algorithm(), why);
}

void check_nvcomp(shim::NvcompStatus status, const char* call, const std::string& name) {
  if (status != shim::nvcomp_success)
    throw CodecError(headrace::detail::located(std::string(call) + " (" + name + ") failed: " + shim::nvcomp()->status_text(status),
                                               __FILE__, __LINE__));
}

// Per-chunk arrays, packed: raw pointers, raw sizes, stored pointers (uploaded), stored sizes, statuses
// (downloaded).
struct Arrays {
  std::size_t n;
  [[nodiscard]] std::size_t raw_sizes() const noexcept { return 8 * n; }
  [[nodiscard]] std::size_t stored_pointers() const noexcept { return 16 * n; }
  [[nodiscard]] std::size_t upload_bytes() const noexcept { return 24 * n; }
  [[nodiscard]] std::size_t stored_sizes() const noexcept { return 24 * n; }
  [[nodiscard]] std::size_t statuses() const noexcept { return 32 * n; }
  [[nodiscard]] std::size_t total_bytes() const noexcept { return 32 * n + 8 * n; }
};

}  // namespace

namespace {

// The device, once nvCOMP can encode the stage there; else UnavailableError saying what is missing.
int available_device(const CodecStage& stage, int device) {
  std::string why;
  HEADRACE_EXPECT(gpu_encoder_available(stage, &why), UnavailableError, "GPU encoding of " + stage.spec() + " unavailable: " + why);
  return device;
}

}  // namespace

bool gpu_encoder_available(const CodecStage& stage, std::string* why) {
  if (compress_api(stage, why) == nullptr || !cuda::gpu_present(why)) return false;
  return true;
}

BatchedEncoder::BatchedEncoder(const CodecStage& stage, int device, std::size_t max_chunks, std::size_t max_raw_chunk_bytes)
    : name_(stage.spec()),
      device_(available_device(stage, device)),
      api_(compress_api(stage, nullptr)),
      options_(stage.compress_options()),
      max_chunks_(max_chunks),
      max_raw_(format::layout::align_up(max_raw_chunk_bytes)) {
  HEADRACE_EXPECT(max_chunks > 0 && max_raw_chunk_bytes > 0 && max_raw_chunk_bytes <= api_->max_chunk_bytes, UsageError,
                  name_ + ": nvCOMP encodes chunks of 1 to " + std::to_string(api_->max_chunk_bytes) + " bytes, asked for " +
                      std::to_string(max_raw_chunk_bytes));
  device_.make_current();
  std::size_t bound = 0, temp = 0;
  check_nvcomp(api_->get_max_output_chunk_size(max_raw_chunk_bytes, options_, &bound), "nvcompBatchedCompressGetMaxOutputChunkSize", name_);
  check_nvcomp(api_->get_temp_size(max_chunks, max_raw_chunk_bytes, options_, &temp, max_chunks * max_raw_chunk_bytes, nullptr),
               "nvcompBatchedCompressGetTempSize", name_);
  max_stored_ = format::layout::align_up(bound);
  raw_ = cuda::DeviceBuffer(max_chunks * max_raw_);
  stored_ = cuda::DeviceBuffer(max_chunks * max_stored_);
  temp_ = cuda::DeviceBuffer(temp > 0 ? temp : 1);
  arrays_ = cuda::DeviceBuffer(Arrays{max_chunks}.total_bytes());
  mirror_ = cuda::PinnedBuffer(Arrays{max_chunks}.total_bytes());
}

std::vector<std::vector<std::byte>> BatchedEncoder::encode(std::span<const std::span<const std::byte>> chunks) {
  HEADRACE_EXPECT(chunks.size() <= max_chunks_, UsageError,
                  name_ + ": a batch of " + std::to_string(chunks.size()) + " chunks; the encoder takes " + std::to_string(max_chunks_));
  std::vector<std::vector<std::byte>> stored(chunks.size());
  if (chunks.empty()) return stored;
  device_.make_current();
  const cuda::CudaDriver& driver = *cuda::driver();
  const auto stream = stream_.handle();
  const Arrays layout{chunks.size()};
  std::byte* host = mirror_.data();
  auto* raw_pointers = reinterpret_cast<std::uint64_t*>(host);
  auto* raw_sizes = reinterpret_cast<std::size_t*>(host + layout.raw_sizes());
  auto* stored_pointers = reinterpret_cast<std::uint64_t*>(host + layout.stored_pointers());
  std::size_t largest = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    HEADRACE_EXPECT(!chunks[i].empty() && chunks[i].size() <= max_raw_, UsageError,
                    name_ + ": chunk " + std::to_string(i) + " of " + std::to_string(chunks[i].size()) + " bytes");
    raw_pointers[i] = raw_.pointer() + i * max_raw_;
    raw_sizes[i] = chunks[i].size();
    stored_pointers[i] = stored_.pointer() + i * max_stored_;
    largest = std::max(largest, chunks[i].size());
    cuda::check(driver.cuMemcpyHtoDAsync(raw_pointers[i], chunks[i].data(), chunks[i].size(), stream), "cuMemcpyHtoDAsync");
  }
  const cuda::CUdeviceptr arrays = arrays_.pointer();
  cuda::check(driver.cuMemcpyHtoDAsync(arrays, host, layout.upload_bytes(), stream), "cuMemcpyHtoDAsync");
  auto at = [&](std::size_t offset) { return reinterpret_cast<void*>(arrays + offset); };
  cuda::Event started(true), finished(true);
  started.record(stream);
  check_nvcomp(api_->compress_async(static_cast<const void* const*>(at(0)), static_cast<const std::size_t*>(at(layout.raw_sizes())),
                                    largest, chunks.size(), reinterpret_cast<void*>(temp_.pointer()), temp_.size_bytes(),
                                    static_cast<void* const*>(at(layout.stored_pointers())),
                                    static_cast<std::size_t*>(at(layout.stored_sizes())), options_,
                                    static_cast<shim::NvcompStatus*>(at(layout.statuses())), stream),
               "nvcompBatchedCompressAsync", name_);
  finished.record(stream);
  cuda::check(driver.cuMemcpyDtoHAsync(host + layout.stored_sizes(), arrays + layout.stored_sizes(),
                                       layout.total_bytes() - layout.stored_sizes(), stream),
              "cuMemcpyDtoHAsync");
  stream_.synchronize();
  kernel_seconds_ = finished.elapsed_ms_since(started) / 1e3;
  const auto* stored_sizes = reinterpret_cast<const std::size_t*>(host + layout.stored_sizes());
  const auto* statuses = reinterpret_cast<const shim::NvcompStatus*>(host + layout.statuses());
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    HEADRACE_EXPECT(statuses[i] == shim::nvcomp_success && stored_sizes[i] > 0 && stored_sizes[i] <= max_stored_, CodecError,
                    name_ + ": nvCOMP could not compress chunk " + std::to_string(i) + " of " + std::to_string(chunks[i].size()) +
                        " bytes: " + shim::nvcomp()->status_text(statuses[i]));
    stored[i].resize(stored_sizes[i]);
    cuda::copy_to_host(stored[i].data(), stored_pointers[i], stored_sizes[i]);
  }
  return stored;
}

std::vector<std::vector<std::byte>> encode_chunks(BatchedEncoder& encoder, const CodecStage& stage,
                                                  std::span<const std::span<const std::byte>> chunks) {
  std::vector<std::span<const std::byte>> blocks;
  std::vector<std::size_t> first_block;
  for (const auto chunk : chunks) {
    first_block.push_back(blocks.size());
    for (const auto block : stage.raw_blocks(chunk)) blocks.push_back(block);
  }
  first_block.push_back(blocks.size());
  std::vector<std::vector<std::byte>> encoded;
  for (std::size_t at = 0; at < blocks.size(); at += encoder.max_chunks()) {
    auto part = encoder.encode(std::span(blocks).subspan(at, std::min(encoder.max_chunks(), blocks.size() - at)));
    for (auto& block : part) encoded.push_back(std::move(block));
  }
  std::vector<std::vector<std::byte>> stored;
  for (std::size_t c = 0; c < chunks.size(); ++c)
    stored.push_back(stage.join_blocks({std::make_move_iterator(encoded.begin() + static_cast<std::ptrdiff_t>(first_block[c])),
                                        std::make_move_iterator(encoded.begin() + static_cast<std::ptrdiff_t>(first_block[c + 1]))}));
  return stored;
}

}  // namespace headrace::codec::gpu
