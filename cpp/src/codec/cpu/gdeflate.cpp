#include "headrace/codec/cpu/gdeflate.hpp"

#include <exception>
#include <mutex>

#include "headrace/error.hpp"
#include "headrace/shim/nvcomp.hpp"

namespace headrace::codec::cpu {
namespace {

const shim::NvcompCpuGdeflate& require_gdeflate() {
  const shim::NvcompCpuGdeflate* api = shim::nvcomp_cpu_gdeflate();
  HEADRACE_EXPECT(api != nullptr, UnavailableError, "CPU gdeflate unavailable: " + shim::why_no_nvcomp_cpu());
  return *api;
}

}  // namespace

bool gdeflate_available(std::string* why) {
  const bool available = shim::nvcomp_cpu_gdeflate() != nullptr;
  if (why != nullptr) *why = available ? std::string() : shim::why_no_nvcomp_cpu();
  return available;
}

std::vector<std::byte> gdeflate_encode(int level, std::span<const std::byte> raw) {
  const shim::NvcompCpuGdeflate& api = require_gdeflate();
  static_assert(gdeflate_max_raw_chunk_bytes == shim::nvcomp_cpu_gdeflate_max_raw_chunk_bytes);
  HEADRACE_EXPECT(!raw.empty() && raw.size() <= gdeflate_max_raw_chunk_bytes, UsageError,
                  "gdeflate chunks hold 1 to " + std::to_string(gdeflate_max_raw_chunk_bytes) +
                      " bytes when encoded on the CPU, got " + std::to_string(raw.size()));
  HEADRACE_EXPECT(level >= 0 && level <= 12, UsageError,
                  "gdeflate levels are 1..12 (0 for the default), got " + std::to_string(level));
  const int effective_level = level == 0 ? gdeflate_default_level : level;
  std::vector<std::byte> stored;
  try {
    std::size_t bound = 0;
    api.compress_get_max_output_chunk_size(raw.size(), &bound);
    stored.resize(bound);
    const void* input = raw.data();
    const std::size_t input_bytes = raw.size();
    void* output = stored.data();
    std::size_t written = 0;
    {
      // nvCOMP's CPU compressor corrupts the heap when two threads compress at once (seen with shuffled
      // floats: free(): invalid pointer), so it runs one call at a time.
      static std::mutex one_at_a_time;
      std::lock_guard lock(one_at_a_time);
      api.compress(&input, &input_bytes, raw.size(), 1, &output, &written, effective_level);
    }
    HEADRACE_EXPECT(written > 0 && written <= bound, CodecError,
                    "nvcomp::gdeflate::compressCPU wrote " + std::to_string(written) + " bytes into " +
                        std::to_string(bound));
    stored.resize(written);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {  // nvcomp::NVCompException
    throw CodecError(detail::located("nvcomp::gdeflate::compressCPU failed for a chunk of " +
                                         std::to_string(raw.size()) + " bytes: " + error.what(),
                                     __FILE__, __LINE__));
  }
  return stored;
}

void gdeflate_decode(std::span<const std::byte> stored, std::span<std::byte> raw, const std::string& path,
                     std::uint64_t offset) {
  const shim::NvcompCpuGdeflate& api = require_gdeflate();
  const std::string expected = "gdeflate data of " + std::to_string(raw.size()) + " bytes";
  HEADRACE_EXPECT(!raw.empty(), UsageError, path + ": offset " + std::to_string(offset) + ": a gdeflate chunk of 0 raw bytes");
  HEADRACE_EXPECT_DATA(!stored.empty(), CodecError, path, offset, expected, "0 stored bytes");
  const void* input = stored.data();
  const std::size_t input_bytes = stored.size();
  void* output = raw.data();
  std::size_t output_capacity = raw.size();
  std::size_t decoded = 0;
  bool failed = false;
  std::string failure;
  try {
    api.decompress(&input, &input_bytes, 1, &output, &output_capacity, &decoded);
  } catch (const std::exception& error) {  // nvcomp::NVCompException
    failed = true;
    failure = error.what();
  }
  HEADRACE_EXPECT_DATA(!failed, CodecError, path, offset, expected,
                       "a corrupt gdeflate stream (nvcomp::gdeflate::decompressCPU: " + failure + ")");
  HEADRACE_EXPECT_DATA(decoded == raw.size(), CodecError, path, offset, expected, std::to_string(decoded) + " bytes");
}

}  // namespace headrace::codec::cpu
