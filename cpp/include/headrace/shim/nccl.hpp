// NCCL, loaded at run time (libnccl.so.2 from the nvidia-nccl-cu13 wheel, or the system's): the few entry
// points headrace's GPU collectives use (a communicator per job, grouped point-to-point sends and
// receives). No NCCL header is needed to build: the C types are declared here with nccl.h's ABI
// (NCCL 2.x, which has kept these signatures since 2.7).
#pragma once

#include <cstddef>
#include <string>

#include "headrace/shim/cuda_types.hpp"

namespace headrace::shim {

using NcclResult = int;  // ncclResult_t
inline constexpr NcclResult nccl_success = 0;
using NcclComm = struct NcclCommOpaque*;  // ncclComm_t

inline constexpr std::size_t nccl_unique_id_bytes = 128;
struct NcclUniqueId {  // ncclUniqueId: passed by value, as nccl.h's struct is
  char internal[nccl_unique_id_bytes];
};

enum class NcclType : int { uint8 = 1 };  // ncclDataType_t: transfers move bytes

struct Nccl {
  NcclResult (*get_version)(int*) = nullptr;
  NcclResult (*get_unique_id)(NcclUniqueId*) = nullptr;
  NcclResult (*comm_init_rank)(NcclComm*, int, NcclUniqueId, int) = nullptr;
  NcclResult (*comm_destroy)(NcclComm) = nullptr;
  NcclResult (*comm_abort)(NcclComm) = nullptr;
  NcclResult (*comm_get_async_error)(NcclComm, NcclResult*) = nullptr;
  const char* (*get_error_string)(NcclResult) = nullptr;
  NcclResult (*group_start)() = nullptr;
  NcclResult (*group_end)() = nullptr;
  NcclResult (*send)(const void*, std::size_t, NcclType, int, NcclComm, CUstream) = nullptr;
  NcclResult (*recv)(void*, std::size_t, NcclType, int, NcclComm, CUstream) = nullptr;
  int version = 0;  // major * 10000 + minor * 100 + patch (NCCL_VERSION_CODE)
  std::string path;

  // Throws a headrace Error naming `what` and NCCL's message when result is not ncclSuccess.
  void check(NcclResult result, const char* what) const;
  [[nodiscard]] std::string version_text() const;
};

// NCCL, loaded once per process, or nullptr; why_no_nccl() then says why (not found, a symbol missing).
[[nodiscard]] const Nccl* nccl() noexcept;
[[nodiscard]] const std::string& why_no_nccl() noexcept;
// The loaded NCCL, or UnavailableError with why_no_nccl().
[[nodiscard]] const Nccl& require_nccl();

}  // namespace headrace::shim
