#include "headrace/shim/nvcomp.hpp"

#include <iterator>

#include "headrace/shim/shared_library.hpp"

namespace headrace::shim {

namespace {

// nvCOMP's own names (nvcomp/shared_types.h), for messages when nvcompGetStatusString is absent.
const char* status_name(NvcompStatus status) noexcept {
  switch (status) {
    case 0: return "nvcompSuccess";
    case 10: return "nvcompErrorInvalidValue";
    case 11: return "nvcompErrorNotSupported";
    case 12: return "nvcompErrorCannotDecompress";
    case 13: return "nvcompErrorBadChecksum";
    case 14: return "nvcompErrorCannotVerifyChecksums";
    case 15: return "nvcompErrorOutputBufferTooSmall";
    case 16: return "nvcompErrorWrongHeaderLength";
    case 17: return "nvcompErrorAlignment";
    case 18: return "nvcompErrorChunkSizeTooLarge";
    case 19: return "nvcompErrorCannotCompress";
    case 20: return "nvcompErrorWrongInputLength";
    case 21: return "nvcompErrorBatchSizeTooLarge";
    case 22: return "nvcompErrorSubChunkCountTooLarge";
    case 23: return "nvcompErrorSubChunkCountTooSmall";
    case 24: return "nvcompErrorOutputBufferAlignmentTooSmall";
    case 1000: return "nvcompErrorCudaError";
    case 10000: return "nvcompErrorInternal";
    default: return "unknown nvcompStatus_t";
  }
}

// nvCOMP's name of each algorithm in its entry points, and its chunk limits (nvcomp<Name>
// {Compression,Decompression}MaxAllowedChunkSize), in NvcompAlgorithm's order.
struct AlgorithmNames {
  NvcompAlgorithm algorithm;
  const char* name;
  std::size_t max_compress_bytes, max_decompress_bytes;
};

constexpr AlgorithmNames algorithm_names[] = {
    {NvcompAlgorithm::lz4, "LZ4", std::size_t{1} << 24, (std::size_t{1} << 32) - 1},
    {NvcompAlgorithm::zstd, "Zstd", (std::size_t{1} << 31) - 1, (std::size_t{1} << 31) - 1},
    {NvcompAlgorithm::gdeflate, "Gdeflate", std::size_t{1} << 31, (std::size_t{1} << 32) + 288},
    {NvcompAlgorithm::snappy, "Snappy", std::size_t{1} << 24, (std::size_t{1} << 31) - 1},
    {NvcompAlgorithm::deflate, "Deflate", std::size_t{1} << 31, (std::size_t{1} << 32) - 1},
    {NvcompAlgorithm::ans, "ANS", std::size_t{1} << 24, std::size_t{1} << 25},
    {NvcompAlgorithm::bitcomp, "Bitcomp", std::size_t{1} << 24, std::size_t{1} << 25},
    {NvcompAlgorithm::cascaded, "Cascaded", std::size_t{1} << 24, (std::size_t{1} << 24) + 8},
};
static_assert(std::size(algorithm_names) == nvcomp_algorithm_count);

constexpr unsigned supported_major_version = 6;

std::string semantic_version(std::uint32_t version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 100) + "." + std::to_string(version % 100);
}

}  // namespace

// Fills the private parts of Nvcomp once per process.
struct NvcompLoader {
  // Never unloaded: nvCOMP's CUDA runtime keeps state until the process ends, and unloading it from
  // a static destructor would race whatever still runs.
  SharedLibrary* library = new SharedLibrary({"libnvcomp.so.6", "libnvcomp.so.5", "libnvcomp.so"});
  Nvcomp api;
  std::string why;
  bool ok = false;

  void load() {
    if (!library->loaded()) {
      why = "nvCOMP not found (tried libnvcomp.so.6, .so.5 and .so in the registered library directories and "
            "the system's; pip install nvidia-libnvcomp-cu13): " + library->why();
      return;
    }
    api.path_ = library->path();
    auto get_properties = library->function<NvcompStatus (*)(NvcompProperties*)>("nvcompGetProperties");
    if (get_properties == nullptr) {
      why = api.path_ + " has no nvcompGetProperties";
      return;
    }
    if (const NvcompStatus status = get_properties(&api.properties_); status != nvcomp_success) {
      why = api.path_ + ": nvcompGetProperties failed: " + status_name(status);
      return;
    }
    if (api.properties_.version / 1000 != supported_major_version) {
      why = api.path_ + " is nvCOMP " + semantic_version(api.properties_.version) +
            "; headrace uses the batched API of nvCOMP " + std::to_string(supported_major_version) + ".x";
      return;
    }
    api.get_status_string_ = library->function<const char* (*)(NvcompStatus)>("nvcompGetStatusString");
    for (const auto& names : algorithm_names) {
      const auto index = static_cast<std::size_t>(names.algorithm);
      const std::string prefix = std::string("nvcompBatched") + names.name;
      // Resolves prefix + suffix into *slot; false (and the name in *missing) when absent.
      auto resolve = [&](auto*& slot, const char* suffix, std::string& missing) {
        return library->bind(slot, (prefix + suffix).c_str(), missing);
      };
      NvcompDecompressApi& decompress = api.apis_[index];
      bool found = resolve(decompress.get_required_alignments, "DecompressGetRequiredAlignments", api.missing_[index]);
      found = resolve(decompress.get_temp_size, "DecompressGetTempSize", api.missing_[index]) && found;
      found = resolve(decompress.decompress_async, "DecompressAsync", api.missing_[index]) && found;
      decompress.max_chunk_bytes = names.max_decompress_bytes;
      if (!found) decompress = NvcompDecompressApi{};
      NvcompCompressApi& compress = api.compress_apis_[index];
      std::string& compress_missing = api.compress_missing_[index];
      found = resolve(compress.get_required_alignments, "CompressGetRequiredAlignments", compress_missing);
      found = resolve(compress.get_temp_size, "CompressGetTempSize", compress_missing) && found;
      found = resolve(compress.get_max_output_chunk_size, "CompressGetMaxOutputChunkSize", compress_missing) && found;
      found = resolve(compress.compress_async, "CompressAsync", compress_missing) && found;
      compress.max_chunk_bytes = names.max_compress_bytes;
      if (!found) compress = NvcompCompressApi{};
    }
    NvcompBitcompHost& host = api.bitcomp_host_;
    bool found = true;
    auto host_function = [&](auto*& slot, const char* symbol) { found = library->bind(slot, symbol, api.bitcomp_missing_) && found; };
    host_function(host.create_plan, "bitcompCreatePlan");
    host_function(host.create_plan_from_compressed, "bitcompCreatePlanFromCompressedData");
    host_function(host.destroy_plan, "bitcompDestroyPlan");
    host_function(host.max_buflen, "bitcompMaxBuflen");
    host_function(host.compressed_size, "bitcompGetCompressedSize");
    host_function(host.uncompressed_size, "bitcompGetUncompressedSize");
    host_function(host.compress_lossless, "bitcompHostCompressLossless");
    host_function(host.compress_lossy_fp32, "bitcompHostCompressLossy_fp32");
    host_function(host.compress_lossy_fp64, "bitcompHostCompressLossy_fp64");
    host_function(host.uncompress, "bitcompHostUncompress");
    if (!found) host = NvcompBitcompHost{};
    ok = true;
  }
};

namespace {
NvcompLoader& nvcomp_loader() { return load_once<NvcompLoader>(); }
}  // namespace

std::string Nvcomp::version() const { return semantic_version(properties_.version); }

const NvcompDecompressApi* Nvcomp::decompress_api(NvcompAlgorithm algorithm, std::string* why) const {
  const auto index = static_cast<std::size_t>(algorithm);
  if (apis_[index].decompress_async != nullptr) return &apis_[index];
  if (why != nullptr) *why = missing_[index];
  return nullptr;
}

const NvcompCompressApi* Nvcomp::compress_api(NvcompAlgorithm algorithm, std::string* why) const {
  const auto index = static_cast<std::size_t>(algorithm);
  if (compress_apis_[index].compress_async != nullptr) return &compress_apis_[index];
  if (why != nullptr) *why = compress_missing_[index];
  return nullptr;
}

const NvcompBitcompHost* Nvcomp::bitcomp_host(std::string* why) const {
  if (bitcomp_host_.uncompress != nullptr) return &bitcomp_host_;
  if (why != nullptr) *why = bitcomp_missing_;
  return nullptr;
}

std::string Nvcomp::status_text(NvcompStatus status) const {
  std::string text = std::string(status_name(status)) + " (" + std::to_string(status) + ")";
  if (get_status_string_ != nullptr) {
    if (const char* described = get_status_string_(status); described != nullptr && *described != '\0')
      text += ": " + std::string(described);
  }
  return text;
}

const Nvcomp* nvcomp() noexcept { return nvcomp_loader().ok ? &nvcomp_loader().api : nullptr; }

const std::string& why_no_nvcomp() noexcept { return nvcomp_loader().why; }

namespace {

struct CpuLoader {
  // Never unloaded, like libnvcomp: its worker threads may outlive static destructors.
  SharedLibrary* library = new SharedLibrary({"libnvcomp_cpu.so.6", "libnvcomp_cpu.so.5", "libnvcomp_cpu.so"});
  NvcompCpuGdeflate api{};
  std::string why;
  bool ok = false;

  void load() {
    if (!library->loaded()) {
      why = "nvCOMP's CPU library not found (tried libnvcomp_cpu.so.6, .so.5 and .so in the registered library "
            "directories and the system's; pip install nvidia-libnvcomp-cu13): " + library->why();
      return;
    }
    // Itanium C++ names of the functions of nvcomp/native/gdeflate_cpu.h (size_t is unsigned long: m).
    constexpr const char* max_output = "_ZN6nvcomp8gdeflate32compressCPUGetMaxOutputChunkSizeEmPm";
    constexpr const char* compress = "_ZN6nvcomp8gdeflate11compressCPUEPKPKvPKmmmPKPvPmi";
    constexpr const char* decompress = "_ZN6nvcomp8gdeflate13decompressCPUEPKPKvPKmmPKPvPmSA_";
    api.compress_get_max_output_chunk_size = library->function<decltype(api.compress_get_max_output_chunk_size)>(max_output);
    api.compress = library->function<decltype(api.compress)>(compress);
    api.decompress = library->function<decltype(api.decompress)>(decompress);
    for (const char* name : {max_output, compress, decompress}) {
      if (library->symbol(name) == nullptr) {
        why = library->path() + " has no " + name + " (nvcomp::gdeflate of nvcomp/native/gdeflate_cpu.h)";
        return;
      }
    }
    ok = true;
  }
};

CpuLoader& cpu_loader() { return load_once<CpuLoader>(); }

}  // namespace

const NvcompCpuGdeflate* nvcomp_cpu_gdeflate() noexcept { return cpu_loader().ok ? &cpu_loader().api : nullptr; }

const std::string& why_no_nvcomp_cpu() noexcept { return cpu_loader().why; }

const std::string& nvcomp_cpu_path() noexcept { return cpu_loader().library->path(); }

}  // namespace headrace::shim
