// nvCOMP 6, loaded at run time (libnvcomp.so.6 from the nvidia-libnvcomp-cu13 wheel): the batched
// compression and decompression entry points of its codecs, Bitcomp's host functions, and nvCOMP's CPU
// GDeflate codec (libnvcomp_cpu.so.6). No nvCOMP header is needed to build: the few C types are
// declared here with the ABI of nvcomp/shared_types.h, the codecs' headers, nvcomp/native/bitcomp.h and
// nvcomp/native/gdeflate_cpu.h of nvCOMP 6.0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "headrace/detail/enum_names.hpp"
#include "headrace/shim/cuda_types.hpp"

namespace headrace::shim {

// nvcompStatus_t (an int-sized C enum).
using NvcompStatus = int;
inline constexpr NvcompStatus nvcomp_success = 0;

// nvcompDecompressBackend_t.
enum class NvcompBackend : int {
  automatic = 0,  // NVCOMP_DECOMPRESS_BACKEND_DEFAULT: nvCOMP picks the hardware engine or CUDA
  hardware = 1,   // NVCOMP_DECOMPRESS_BACKEND_HARDWARE: the decompression engine (Blackwell and later)
  cuda = 2,       // NVCOMP_DECOMPRESS_BACKEND_CUDA: CUDA kernels, which report corrupt input per chunk
};

// The options structs of nvCOMP 6's batched API (nvcompBatched<Name>{Compress,Decompress}Opts_t): each
// is 64 bytes, passed by value (in memory, by the x86-64 ABI, whatever its members), so one aligned
// 64-byte block filled field by field at the offsets of each codec's header stands for all of them.
struct NvcompOptions {
  alignas(8) unsigned char bytes[64] = {};
  template <class T>
  NvcompOptions& put(std::size_t offset, T value) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(bytes + offset, &value, sizeof(T));
    return *this;
  }
  friend bool operator==(const NvcompOptions& a, const NvcompOptions& b) noexcept {
    return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
  }
  friend bool operator<(const NvcompOptions& a, const NvcompOptions& b) noexcept {
    return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) < 0;
  }
};
static_assert(sizeof(NvcompOptions) == 64, "nvCOMP 6 options are 64 bytes");

// nvcompType_t.
enum class NvcompType : int {
  char_ = 0, uchar = 1, short_ = 2, ushort = 3, int_ = 4, uint = 5, longlong = 6, ulonglong = 7,
  float8_e4m3 = 9, float16 = 10, float32 = 11, float64 = 12, bits = 0xff,
};

// nvcompAlignmentRequirements_t: minimum alignment, in bytes, of each buffer passed to nvCOMP.
struct NvcompAlignments {
  std::size_t input = 1;
  std::size_t output = 1;
  std::size_t temp = 1;
};

// nvcompProperties_t.
struct NvcompProperties {
  std::uint32_t version = 0;         // major * 1000 + minor * 100 + patch
  std::uint32_t cudart_version = 0;  // the CUDA runtime nvCOMP was built with
};

// Every codec of nvCOMP 6's batched API but gzip (a deflate stream in a header, decode only).
enum class NvcompAlgorithm : std::uint8_t { lz4, zstd, gdeflate, snappy, deflate, ans, bitcomp, cascaded };
inline constexpr std::size_t nvcomp_algorithm_count = 8;
inline constexpr detail::EnumNames<NvcompAlgorithm, nvcomp_algorithm_count> nvcomp_algorithm_names{
    {{NvcompAlgorithm::lz4, "lz4"},
     {NvcompAlgorithm::zstd, "zstd"},
     {NvcompAlgorithm::gdeflate, "gdeflate"},
     {NvcompAlgorithm::snappy, "snappy"},
     {NvcompAlgorithm::deflate, "deflate"},
     {NvcompAlgorithm::ans, "ans"},
     {NvcompAlgorithm::bitcomp, "bitcomp"},
     {NvcompAlgorithm::cascaded, "cascaded"}}};
[[nodiscard]] constexpr const char* to_string(NvcompAlgorithm algorithm) noexcept {
  return detail::name_of(nvcomp_algorithm_names, algorithm);
}

// One algorithm's batched decompression API, as nvCOMP 6 declares it (names for LZ4; the others are
// the same with LZ4 replaced):
//   nvcompStatus_t nvcompBatchedLZ4DecompressGetRequiredAlignments(
//       nvcompBatchedLZ4DecompressOpts_t decompress_opts, nvcompAlignmentRequirements_t* alignment_requirements);
//   nvcompStatus_t nvcompBatchedLZ4DecompressGetTempSize(size_t num_chunks, size_t max_uncompressed_chunk_bytes,
//       nvcompBatchedLZ4DecompressOpts_t decompress_opts, size_t* temp_bytes,
//       size_t max_total_uncompressed_bytes, cudaStream_t stream);
//   nvcompStatus_t nvcompBatchedLZ4DecompressAsync(const void* const* device_compressed_chunk_ptrs,
//       const size_t* device_compressed_chunk_bytes, const size_t* device_uncompressed_buffer_bytes,
//       size_t* device_uncompressed_chunk_bytes, size_t num_chunks, void* const device_temp_ptr,
//       size_t temp_bytes, void* const* device_uncompressed_chunk_ptrs,
//       nvcompBatchedLZ4DecompressOpts_t decompress_opts, nvcompStatus_t* device_statuses, cudaStream_t stream);
struct NvcompDecompressApi {
  NvcompStatus (*get_required_alignments)(NvcompOptions, NvcompAlignments*);
  NvcompStatus (*get_temp_size)(std::size_t num_chunks, std::size_t max_uncompressed_chunk_bytes,
                                NvcompOptions, std::size_t* temp_bytes,
                                std::size_t max_total_uncompressed_bytes, CUstream);
  NvcompStatus (*decompress_async)(const void* const* device_compressed_chunk_ptrs,
                                   const std::size_t* device_compressed_chunk_bytes,
                                   const std::size_t* device_uncompressed_buffer_bytes,
                                   std::size_t* device_uncompressed_chunk_bytes, std::size_t num_chunks,
                                   void* device_temp_ptr, std::size_t temp_bytes,
                                   void* const* device_uncompressed_chunk_ptrs, NvcompOptions,
                                   NvcompStatus* device_statuses, CUstream);
  // The largest chunk, compressed or not, this algorithm's decompressor accepts
  // (nvcomp<Name>DecompressionMaxAllowedChunkSize).
  std::size_t max_chunk_bytes = 0;
};

// One algorithm's batched compression API (nvCOMP 6, names for LZ4):
//   nvcompBatchedLZ4CompressGetRequiredAlignments(opts, nvcompAlignmentRequirements_t*)
//   nvcompBatchedLZ4CompressGetTempSize(num_chunks, max_uncompressed_chunk_bytes, opts, size_t* temp_bytes,
//       max_total_uncompressed_bytes, cudaStream_t)
//   nvcompBatchedLZ4CompressGetMaxOutputChunkSize(max_uncompressed_chunk_bytes, opts, size_t* max_compressed)
//   nvcompBatchedLZ4CompressAsync(const void* const* device_uncompressed_chunk_ptrs,
//       const size_t* device_uncompressed_chunk_bytes, size_t max_uncompressed_chunk_bytes, size_t num_chunks,
//       void* device_temp_ptr, size_t temp_bytes, void* const* device_compressed_chunk_ptrs,
//       size_t* device_compressed_chunk_bytes, opts, nvcompStatus_t* device_statuses, cudaStream_t)
struct NvcompCompressApi {
  NvcompStatus (*get_required_alignments)(NvcompOptions, NvcompAlignments*);
  NvcompStatus (*get_temp_size)(std::size_t num_chunks, std::size_t max_uncompressed_chunk_bytes, NvcompOptions,
                                std::size_t* temp_bytes, std::size_t max_total_uncompressed_bytes, CUstream);
  NvcompStatus (*get_max_output_chunk_size)(std::size_t max_uncompressed_chunk_bytes, NvcompOptions,
                                            std::size_t* max_compressed_chunk_bytes);
  NvcompStatus (*compress_async)(const void* const* device_uncompressed_chunk_ptrs,
                                 const std::size_t* device_uncompressed_chunk_bytes,
                                 std::size_t max_uncompressed_chunk_bytes, std::size_t num_chunks, void* device_temp_ptr,
                                 std::size_t temp_bytes, void* const* device_compressed_chunk_ptrs,
                                 std::size_t* device_compressed_chunk_bytes, NvcompOptions,
                                 NvcompStatus* device_statuses, CUstream);
  // nvcomp<Name>CompressionMaxAllowedChunkSize.
  std::size_t max_chunk_bytes = 0;
};

// Bitcomp's native host functions (nvcomp/native/bitcomp.h, in libnvcomp): they compress and decompress
// the streams nvCOMP's batched Bitcomp decodes on the GPU, on the CPU with no GPU at all. The handle is
// an opaque pointer; results are bitcompResult_t (0 is success).
struct NvcompBitcompHost {
  using Handle = void*;
  // bitcompCreatePlan(handle*, size_t n, bitcompDataType_t, bitcompMode_t, bitcompAlgorithm_t)
  int (*create_plan)(Handle*, std::size_t bytes, int data_type, int mode, int algorithm);
  int (*create_plan_from_compressed)(Handle*, const void* compressed);
  int (*destroy_plan)(Handle);
  // bitcompMaxBuflen(size_t uncompressed_bytes): the largest compressed size.
  std::size_t (*max_buflen)(std::size_t);
  int (*compressed_size)(const void* compressed, std::size_t* bytes);      // bitcompGetCompressedSize
  int (*uncompressed_size)(const void* compressed, std::size_t* bytes);    // bitcompGetUncompressedSize
  int (*compress_lossless)(Handle, const void* input, void* output);       // bitcompHostCompressLossless
  int (*compress_lossy_fp32)(Handle, const float* input, void* output, float delta);
  int (*compress_lossy_fp64)(Handle, const double* input, void* output, double delta);
  int (*uncompress)(Handle, const void* input, void* output);              // bitcompHostUncompress
};

// The loaded library: nvcompGetProperties and nvcompGetStatusString, and one table per algorithm
// whose entry points were all found (an algorithm with one missing says so in why()).
class Nvcomp {
 public:
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const NvcompProperties& properties() const noexcept { return properties_; }
  [[nodiscard]] std::string version() const;  // "6.0.0"
  // The algorithm's entry points, or nullptr with *why naming the missing symbol.
  [[nodiscard]] const NvcompDecompressApi* decompress_api(NvcompAlgorithm algorithm, std::string* why) const;
  [[nodiscard]] const NvcompCompressApi* compress_api(NvcompAlgorithm algorithm, std::string* why) const;
  // Bitcomp's host functions, or nullptr with *why naming the missing symbol.
  [[nodiscard]] const NvcompBitcompHost* bitcomp_host(std::string* why) const;
  // "nvcompErrorCannotDecompress (12)"; the library's text when it has one.
  [[nodiscard]] std::string status_text(NvcompStatus status) const;

 private:
  friend struct NvcompLoader;
  std::string path_;
  NvcompProperties properties_;
  const char* (*get_status_string_)(NvcompStatus) = nullptr;
  NvcompDecompressApi apis_[nvcomp_algorithm_count] = {};
  NvcompCompressApi compress_apis_[nvcomp_algorithm_count] = {};
  std::string missing_[nvcomp_algorithm_count], compress_missing_[nvcomp_algorithm_count];
  NvcompBitcompHost bitcomp_host_{};
  std::string bitcomp_missing_;
};

// nvCOMP, loaded once per process (libnvcomp.so.6, .so.5, .so in the registered library directories,
// then the system's), or nullptr when it is missing, lacks nvcompGetProperties, or is not major
// version 6 (the batched API's signatures changed between 4, 5 and 6); why_no_nvcomp() says which.
[[nodiscard]] const Nvcomp* nvcomp() noexcept;
[[nodiscard]] const std::string& why_no_nvcomp() noexcept;

// nvCOMP's CPU GDeflate codec (libnvcomp_cpu.so.6), declared in nvcomp/native/gdeflate_cpu.h as C++
// functions of namespace nvcomp::gdeflate; resolved by their Itanium-mangled names. They throw
// nvcomp::NVCompException (a std::runtime_error) on error; callers catch std::exception.
struct NvcompCpuGdeflate {
  // void compressCPUGetMaxOutputChunkSize(size_t max_uncompressed_chunk_bytes, size_t* max_compressed_chunk_bytes);
  void (*compress_get_max_output_chunk_size)(std::size_t, std::size_t*);
  // void compressCPU(const void* const* in_ptr, const size_t* in_bytes, size_t max_uncompressed_chunk_bytes,
  //                  size_t batch_size, void* const* out_ptr, size_t* out_bytes, int level);
  void (*compress)(const void* const*, const std::size_t*, std::size_t, std::size_t, void* const*, std::size_t*, int);
  // void decompressCPU(const void* const* in_ptr, const size_t* in_bytes, size_t batch_size, void* const* out_ptr,
  //                    size_t* out_buffer_bytes, size_t* out_bytes);
  void (*decompress)(const void* const*, const std::size_t*, std::size_t, void* const*, std::size_t*, std::size_t*);
};
// The largest raw chunk compressCPU accepts (nvcompGdeflateCPUCompressionMaxAllowedChunkSize).
inline constexpr std::size_t nvcomp_cpu_gdeflate_max_raw_chunk_bytes = std::size_t{1} << 16;

// Loaded once per process (libnvcomp_cpu.so.6, .so.5, .so), or nullptr; why_no_nvcomp_cpu() says why.
[[nodiscard]] const NvcompCpuGdeflate* nvcomp_cpu_gdeflate() noexcept;
[[nodiscard]] const std::string& why_no_nvcomp_cpu() noexcept;
[[nodiscard]] const std::string& nvcomp_cpu_path() noexcept;

}  // namespace headrace::shim
