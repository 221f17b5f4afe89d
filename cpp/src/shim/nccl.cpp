#include "headrace/shim/nccl.hpp"


#include "headrace/error.hpp"
#include "headrace/shim/shared_library.hpp"

namespace headrace::shim {

namespace {

// NCCL's own names (nccl.h's ncclResult_t), for messages when ncclGetErrorString says less.
const char* result_name(NcclResult result) noexcept {
  switch (result) {
    case 0: return "ncclSuccess";
    case 1: return "ncclUnhandledCudaError";
    case 2: return "ncclSystemError";
    case 3: return "ncclInternalError";
    case 4: return "ncclInvalidArgument";
    case 5: return "ncclInvalidUsage";
    case 6: return "ncclRemoteError";
    case 7: return "ncclInProgress";
    case 8: return "ncclTimeout";
    default: return "unknown ncclResult_t";
  }
}

constexpr int oldest_version = 20700;  // ncclSend/ncclRecv came with NCCL 2.7

struct NcclLoader {
  // Never unloaded: NCCL's proxy threads may outlive static destructors.
  SharedLibrary* library = new SharedLibrary({"libnccl.so.2", "libnccl.so"});
  Nccl api;
  std::string why;
  bool ok = false;

  void load() {
    if (!library->loaded()) {
      why = "NCCL not found (tried libnccl.so.2 and libnccl.so in the registered library directories and the "
            "system's; pip install nvidia-nccl-cu13): " + library->why();
      return;
    }
    api.path = library->path();
    bool found = true;
    auto resolve = [&](auto*& slot, const char* symbol) { found = library->bind(slot, symbol, why) && found; };
    resolve(api.get_version, "ncclGetVersion");
    resolve(api.get_unique_id, "ncclGetUniqueId");
    resolve(api.comm_init_rank, "ncclCommInitRank");
    resolve(api.comm_destroy, "ncclCommDestroy");
    resolve(api.comm_abort, "ncclCommAbort");
    resolve(api.comm_get_async_error, "ncclCommGetAsyncError");
    resolve(api.get_error_string, "ncclGetErrorString");
    resolve(api.group_start, "ncclGroupStart");
    resolve(api.group_end, "ncclGroupEnd");
    resolve(api.send, "ncclSend");
    resolve(api.recv, "ncclRecv");
    if (!found) return;
    if (api.get_version(&api.version) != nccl_success) {
      why = api.path + ": ncclGetVersion failed";
      return;
    }
    if (api.version < oldest_version) {
      why = api.path + " is NCCL " + api.version_text() + "; headrace's collectives need NCCL 2.7 or later (ncclSend)";
      return;
    }
    ok = true;
  }
};

NcclLoader& loader() { return load_once<NcclLoader>(); }

}  // namespace

void Nccl::check(NcclResult result, const char* what) const {
  if (result == nccl_success) return;
  std::string text = std::string(what) + " failed: " + result_name(result);
  if (const char* described = get_error_string(result); described != nullptr && *described != '\0')
    text += " (" + std::string(described) + ")";
  throw Error(text);
}

std::string Nccl::version_text() const {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." + std::to_string(version % 100);
}

const Nccl* nccl() noexcept { return loader().ok ? &loader().api : nullptr; }

const std::string& why_no_nccl() noexcept { return loader().why; }

const Nccl& require_nccl() {
  if (const Nccl* api = nccl()) return *api;
  throw UnavailableError(why_no_nccl());
}

}  // namespace headrace::shim
