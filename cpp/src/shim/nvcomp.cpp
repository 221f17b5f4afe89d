#include "headrace/shim/nvcomp.hpp"

#include <mutex>

#include "headrace/shim/shared_library.hpp"

namespace headrace::shim {

const char* to_string(NvcompAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case NvcompAlgorithm::lz4: return "lz4";
    case NvcompAlgorithm::zstd: return "zstd";
    case NvcompAlgorithm::gdeflate: return "gdeflate";
  }
  return "?";
}

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

struct AlgorithmSymbols {
  NvcompAlgorithm algorithm;
  const char* alignments;
  const char* temp_size;
  const char* decompress;
  std::size_t max_chunk_bytes;
};

constexpr AlgorithmSymbols algorithm_symbols[] = {
    {NvcompAlgorithm::lz4, "nvcompBatchedLZ4DecompressGetRequiredAlignments", "nvcompBatchedLZ4DecompressGetTempSize",
     "nvcompBatchedLZ4DecompressAsync", (std::size_t{1} << 32) - 1},
    {NvcompAlgorithm::zstd, "nvcompBatchedZstdDecompressGetRequiredAlignments", "nvcompBatchedZstdDecompressGetTempSize",
     "nvcompBatchedZstdDecompressAsync", (std::size_t{1} << 31) - 1},
    {NvcompAlgorithm::gdeflate, "nvcompBatchedGdeflateDecompressGetRequiredAlignments",
     "nvcompBatchedGdeflateDecompressGetTempSize", "nvcompBatchedGdeflateDecompressAsync", (std::size_t{1} << 32) + 288},
};

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
    for (const auto& symbols : algorithm_symbols) {
      const auto index = static_cast<std::size_t>(symbols.algorithm);
      NvcompDecompressApi& table = api.apis_[index];
      table.get_required_alignments =
          library->function<decltype(table.get_required_alignments)>(symbols.alignments);
      table.get_temp_size = library->function<decltype(table.get_temp_size)>(symbols.temp_size);
      table.decompress_async = library->function<decltype(table.decompress_async)>(symbols.decompress);
      table.max_chunk_bytes = symbols.max_chunk_bytes;
      for (const char* name : {symbols.alignments, symbols.temp_size, symbols.decompress}) {
        if (library->symbol(name) == nullptr) {
          api.missing_[index] = api.path_ + " has no " + name;
          table = NvcompDecompressApi{};
          break;
        }
      }
    }
    ok = true;
  }
};

namespace {
NvcompLoader& nvcomp_loader() {
  static NvcompLoader& loader = *new NvcompLoader;
  static std::once_flag once;
  std::call_once(once, [] { loader.load(); });
  return loader;
}
}  // namespace

std::string Nvcomp::version() const { return semantic_version(properties_.version); }

const NvcompDecompressApi* Nvcomp::decompress_api(NvcompAlgorithm algorithm, std::string* why) const {
  const auto index = static_cast<std::size_t>(algorithm);
  if (apis_[index].decompress_async != nullptr) return &apis_[index];
  if (why != nullptr) *why = missing_[index];
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

CpuLoader& cpu_loader() {
  static CpuLoader& loader = *new CpuLoader;
  static std::once_flag once;
  std::call_once(once, [] { loader.load(); });
  return loader;
}

}  // namespace

const NvcompCpuGdeflate* nvcomp_cpu_gdeflate() noexcept { return cpu_loader().ok ? &cpu_loader().api : nullptr; }

const std::string& why_no_nvcomp_cpu() noexcept { return cpu_loader().why; }

const std::string& nvcomp_cpu_path() noexcept { return cpu_loader().library->path(); }

}  // namespace headrace::shim
