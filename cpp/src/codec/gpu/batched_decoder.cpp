#include "headrace/codec/gpu/batched_decoder.hpp"

#include <cstring>
#include <utility>

#include "headrace/error.hpp"

namespace headrace::codec::gpu {
namespace {

namespace cuda = headrace::gpu;

// The per-chunk arrays of a batch of n chunks, packed one after another in the same layout on the
// device and in the pinned mirror: the first four are uploaded, the last two downloaded.
struct ArrayLayout {
  std::size_t n;
  [[nodiscard]] std::size_t stored_pointers() const noexcept { return 0; }
  [[nodiscard]] std::size_t stored_sizes() const noexcept { return 8 * n; }
  [[nodiscard]] std::size_t raw_sizes() const noexcept { return 16 * n; }
  [[nodiscard]] std::size_t raw_pointers() const noexcept { return 24 * n; }
  [[nodiscard]] std::size_t upload_bytes() const noexcept { return 32 * n; }
  [[nodiscard]] std::size_t decoded_sizes() const noexcept { return 32 * n; }
  [[nodiscard]] std::size_t statuses() const noexcept { return 40 * n; }
  [[nodiscard]] std::size_t download_bytes() const noexcept { return 8 * n + sizeof(shim::NvcompStatus) * n; }
  [[nodiscard]] std::size_t total_bytes() const noexcept { return upload_bytes() + download_bytes(); }
};
static_assert(sizeof(void*) == 8 && sizeof(std::size_t) == 8 && sizeof(cuda::CUdeviceptr) == 8);

// The coding's options with the CUDA backend (offset 0 of every decompression options struct).
shim::NvcompOptions cuda_backend_options(const NvcompCoding& coding) {
  shim::NvcompOptions options = coding.options;
  return options.put(0, static_cast<int>(shim::NvcompBackend::cuda));
}

// The entry points for the coding, or nullptr with *why.
const shim::NvcompDecompressApi* api_for(const NvcompCoding& coding, std::string* why) {
  const shim::Nvcomp* library = shim::nvcomp();
  if (library == nullptr) {
    if (why != nullptr) *why = shim::why_no_nvcomp();
    return nullptr;
  }
  return library->decompress_api(coding.algorithm, why);
}

std::string size_text(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

// Checks the codec and the limits, then that the GPU path exists; returns the entry points.
const shim::NvcompDecompressApi& checked_api(const NvcompCoding& codec, const BatchedDecoderLimits& limits) {
  HEADRACE_EXPECT(limits.max_chunks > 0 && limits.max_raw_chunk_bytes > 0 && limits.max_total_raw_bytes > 0, UsageError,
                  "BatchedDecoder: limits must be positive (max_chunks " + std::to_string(limits.max_chunks) +
                      ", max_raw_chunk_bytes " + std::to_string(limits.max_raw_chunk_bytes) + ", max_total_raw_bytes " +
                      std::to_string(limits.max_total_raw_bytes) + ")");
  std::string why;
  HEADRACE_EXPECT(gpu_decoder_available(codec, &why), UnavailableError,
                  "GPU decoding of " + codec.name + " unavailable: " + why);
  const shim::NvcompDecompressApi& api = *api_for(codec, nullptr);
  HEADRACE_EXPECT(limits.max_raw_chunk_bytes <= api.max_chunk_bytes, UsageError,
                  "BatchedDecoder: nvCOMP decodes " + codec.name + " chunks of at most " +
                      size_text(api.max_chunk_bytes) + ", asked for " + size_text(limits.max_raw_chunk_bytes));
  return api;
}

void check_nvcomp(shim::NvcompStatus status, const char* call, const NvcompCoding& codec, const std::string& detail) {
  if (status == shim::nvcomp_success) return;
  throw CodecError(headrace::detail::located(std::string(call) + " (" + codec.name + ") failed: " +
                                       shim::nvcomp()->status_text(status) + (detail.empty() ? "" : ": " + detail),
                                   __FILE__, __LINE__));
}

shim::NvcompAlignments query_alignments(const shim::NvcompDecompressApi& api, const NvcompCoding& codec) {
  shim::NvcompAlignments alignments;
  check_nvcomp(api.get_required_alignments(cuda_backend_options(codec), &alignments),
               "nvcompBatchedDecompressGetRequiredAlignments", codec, "");
  return alignments;
}

std::size_t query_temp_bytes(const shim::NvcompDecompressApi& api, const NvcompCoding& codec,
                             const BatchedDecoderLimits& limits) {
  std::size_t bytes = 0;
  check_nvcomp(api.get_temp_size(limits.max_chunks, limits.max_raw_chunk_bytes, cuda_backend_options(codec), &bytes,
                                 limits.max_total_raw_bytes, nullptr),
               "nvcompBatchedDecompressGetTempSize", codec,
               std::to_string(limits.max_chunks) + " chunks of at most " + size_text(limits.max_raw_chunk_bytes));
  return bytes;
}

bool aligned(cuda::CUdeviceptr address, std::size_t alignment) { return alignment <= 1 || address % alignment == 0; }

}  // namespace

NvcompCoding NvcompCoding::of(const CodecStage& stage) {
  return NvcompCoding{stage.algorithm(), stage.decompress_options(), stage.spec()};
}

bool gpu_decoder_available(const NvcompCoding& codec, std::string* why) {
  std::string reason;
  if (api_for(codec, &reason) == nullptr) {
    if (why != nullptr) *why = reason;
    return false;
  }
  if (!cuda::gpu_present(why)) return false;
  if (why != nullptr) why->clear();
  return true;
}

BatchedDecoder::BatchedDecoder(NvcompCoding coding, const BatchedDecoderLimits& limits)
    : coding_(std::move(coding)),
      limits_(limits),
      api_(&checked_api(coding_, limits)),
      alignments_(query_alignments(*api_, coding_)),
      temp_(query_temp_bytes(*api_, coding_, limits)),
      arrays_(ArrayLayout{limits.max_chunks}.total_bytes()),
      arrays_mirror_(ArrayLayout{limits.max_chunks}.total_bytes()) {
  nvcomp_ = shim::nvcomp();
  // cuMemAlloc aligns to at least 256 bytes.
  HEADRACE_EXPECT(aligned(temp_.pointer(), alignments_.temp), UsageError,
                  "nvCOMP asks for a temp buffer aligned to " + std::to_string(alignments_.temp) + " bytes");
}

BatchedDecoder::~BatchedDecoder() noexcept {
  if (pending_ && pending_items_ > 0) (void)cuda::driver()->cuEventSynchronize(done_.handle());
}

BatchedDecoder::BatchedDecoder(BatchedDecoder&& other) noexcept
    : coding_(std::move(other.coding_)),
      limits_(other.limits_),
      nvcomp_(other.nvcomp_),
      api_(other.api_),
      alignments_(other.alignments_),
      temp_(std::move(other.temp_)),
      arrays_(std::move(other.arrays_)),
      arrays_mirror_(std::move(other.arrays_mirror_)),
      done_(std::move(other.done_)),
      pending_items_(std::exchange(other.pending_items_, 0)),
      pending_(std::exchange(other.pending_, false)) {}

void BatchedDecoder::decode_async(std::span<const DecodeItem> items, cuda::CUstream stream) {
  const char* codec_name = coding_.name.c_str();
  HEADRACE_EXPECT(!pending_, UsageError,
                  std::string("BatchedDecoder (") + codec_name + "): check() the previous batch before decoding the next");
  HEADRACE_EXPECT(arrays_.pointer() != 0, UsageError, "BatchedDecoder: used after it was moved from");
  HEADRACE_EXPECT(items.size() <= limits_.max_chunks, UsageError,
                  std::string("BatchedDecoder (") + codec_name + "): a batch of " + std::to_string(items.size()) +
                      " chunks; the limit is " + std::to_string(limits_.max_chunks));
  std::size_t total_raw_bytes = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const DecodeItem& item = items[i];
    auto which = [&] { return std::string("BatchedDecoder (") + codec_name + "): item " + std::to_string(i) + ": "; };
    HEADRACE_EXPECT(item.stored != 0 && item.raw != 0 && item.stored_size > 0 && item.raw_size > 0, UsageError,
                    which() + "null address or empty chunk (stored " + size_text(item.stored_size) + ", raw " +
                        size_text(item.raw_size) + ")");
    HEADRACE_EXPECT(item.raw_size <= limits_.max_raw_chunk_bytes, UsageError,
                    which() + "raw size " + size_text(item.raw_size) + " over the decoder's limit of " +
                        size_text(limits_.max_raw_chunk_bytes));
    HEADRACE_EXPECT(item.stored_size <= api_->max_chunk_bytes, UsageError,
                    which() + "stored size " + size_text(item.stored_size) + " over nvCOMP's limit of " +
                        size_text(api_->max_chunk_bytes));
    HEADRACE_EXPECT(aligned(item.stored, alignments_.input) && aligned(item.raw, alignments_.output), UsageError,
                    which() + "nvCOMP needs stored bytes aligned to " + std::to_string(alignments_.input) +
                        " and raw bytes to " + std::to_string(alignments_.output) + " bytes");
    total_raw_bytes += item.raw_size;
  }
  HEADRACE_EXPECT(total_raw_bytes <= limits_.max_total_raw_bytes, UsageError,
                  std::string("BatchedDecoder (") + codec_name + "): a batch of " + size_text(total_raw_bytes) +
                      " raw; the limit is " + size_text(limits_.max_total_raw_bytes));
  pending_items_ = items.size();
  pending_ = true;
  if (items.empty()) return;

  const ArrayLayout layout{items.size()};
  std::byte* host = arrays_mirror_.data();
  auto* stored_pointers = reinterpret_cast<std::uint64_t*>(host + layout.stored_pointers());
  auto* stored_sizes = reinterpret_cast<std::size_t*>(host + layout.stored_sizes());
  auto* raw_sizes = reinterpret_cast<std::size_t*>(host + layout.raw_sizes());
  auto* raw_pointers = reinterpret_cast<std::uint64_t*>(host + layout.raw_pointers());
  for (std::size_t i = 0; i < items.size(); ++i) {
    stored_pointers[i] = items[i].stored;
    stored_sizes[i] = items[i].stored_size;
    raw_sizes[i] = items[i].raw_size;
    raw_pointers[i] = items[i].raw;
  }
  // Poison the results so a batch whose download never ran cannot pass check().
  std::memset(host + layout.decoded_sizes(), 0xff, layout.download_bytes());

  const cuda::CudaDriver& driver = *cuda::driver();
  const cuda::CUdeviceptr device = arrays_.pointer();
  try {
    cuda::check(driver.cuMemcpyHtoDAsync(device, host, layout.upload_bytes(), stream), "cuMemcpyHtoDAsync",
                "chunk arrays of a " + std::string(codec_name) + " batch");
    auto device_address = [&](std::size_t offset) { return reinterpret_cast<void*>(device + offset); };
    check_nvcomp(api_->decompress_async(static_cast<const void* const*>(device_address(layout.stored_pointers())),
                                        static_cast<const std::size_t*>(device_address(layout.stored_sizes())),
                                        static_cast<const std::size_t*>(device_address(layout.raw_sizes())),
                                        static_cast<std::size_t*>(device_address(layout.decoded_sizes())),
                                        items.size(), reinterpret_cast<void*>(temp_.pointer()), temp_.size_bytes(),
                                        static_cast<void* const*>(device_address(layout.raw_pointers())),
                                        cuda_backend_options(coding_),
                                        static_cast<shim::NvcompStatus*>(device_address(layout.statuses())), stream),
                 "nvcompBatchedDecompressAsync", coding_,
                 std::to_string(items.size()) + " chunks, " + size_text(total_raw_bytes) + " raw");
    cuda::check(driver.cuMemcpyDtoHAsync(host + layout.decoded_sizes(), device + layout.decoded_sizes(),
                                         layout.download_bytes(), stream),
                "cuMemcpyDtoHAsync", "statuses of a " + std::string(codec_name) + " batch");
    done_.record(stream);
  } catch (...) {
    // An upload may still read the mirror: wait for the stream before the mirror can be reused.
    (void)driver.cuStreamSynchronize(stream);
    pending_ = false;
    pending_items_ = 0;
    throw;
  }
}

std::vector<std::string> BatchedDecoder::failures(std::span<const std::string> labels) {
  HEADRACE_EXPECT(pending_, UsageError, "BatchedDecoder::failures(): no batch was decoded since the last check");
  HEADRACE_EXPECT(labels.size() == pending_items_, UsageError,
                  "BatchedDecoder::failures(): " + std::to_string(labels.size()) + " labels for a batch of " +
                      std::to_string(pending_items_) + " chunks");
  const std::size_t count = pending_items_;
  pending_ = false;
  pending_items_ = 0;
  std::vector<std::string> result(count);
  if (count == 0) return result;
  done_.synchronize();

  const ArrayLayout layout{count};
  const std::byte* host = arrays_mirror_.data();
  const auto* stored_sizes = reinterpret_cast<const std::size_t*>(host + layout.stored_sizes());
  const auto* raw_sizes = reinterpret_cast<const std::size_t*>(host + layout.raw_sizes());
  const auto* decoded_sizes = reinterpret_cast<const std::size_t*>(host + layout.decoded_sizes());
  const auto* statuses = reinterpret_cast<const shim::NvcompStatus*>(host + layout.statuses());
  const std::string& codec_name = coding_.name;
  for (std::size_t i = 0; i < count; ++i) {
    if (statuses[i] == shim::nvcomp_success && decoded_sizes[i] == raw_sizes[i]) continue;
    const std::string found = statuses[i] != shim::nvcomp_success ? "nvCOMP status " + nvcomp_->status_text(statuses[i])
                                                                  : std::to_string(decoded_sizes[i]) + " decoded bytes";
    result[i] = headrace::detail::located(labels[i] + ": expected " + codec_name + " data of " + size_text(raw_sizes[i]) +
                                              " in " + size_text(stored_sizes[i]) + " stored, found " + found + " (GPU decode)",
                                          __FILE__, __LINE__);
  }
  return result;
}

void BatchedDecoder::check(std::span<const std::string> labels) {
  const auto failed = failures(labels);
  std::size_t first = failed.size(), count = 0;
  for (std::size_t i = 0; i < failed.size(); ++i) {
    if (failed[i].empty()) continue;
    ++count;
    if (first == failed.size()) first = i;
  }
  if (count == 0) return;
  std::string message = failed[first];
  if (count > 1) message += " (and " + std::to_string(count - 1) + " more of the " + std::to_string(failed.size()) + " chunks failed)";
  throw CodecError(message);
}

}  // namespace headrace::codec::gpu
