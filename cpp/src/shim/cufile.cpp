#include "headrace/shim/cufile.hpp"

#include <cstdlib>
#include <cstring>

#include "headrace/shim/shared_library.hpp"

namespace headrace::shim {
namespace {

struct ErrorName {
  int code;
  const char* name;
  const char* text;
};

// CUFILEOP_STATUS_ENTRIES of cufile.h.
constexpr ErrorName cufile_errors[] = {
    {0, "CU_FILE_SUCCESS", "cufile success"},
    {5001, "CU_FILE_DRIVER_NOT_INITIALIZED", "nvidia-fs driver is not loaded (allow_compat_mode in cufile.json enables compatibility mode)"},
    {5002, "CU_FILE_DRIVER_INVALID_PROPS", "invalid property"},
    {5003, "CU_FILE_DRIVER_UNSUPPORTED_LIMIT", "property range error"},
    {5004, "CU_FILE_DRIVER_VERSION_MISMATCH", "nvidia-fs driver version mismatch"},
    {5005, "CU_FILE_DRIVER_VERSION_READ_ERROR", "nvidia-fs driver version read error"},
    {5006, "CU_FILE_DRIVER_CLOSING", "driver shutdown in progress"},
    {5007, "CU_FILE_PLATFORM_NOT_SUPPORTED", "GPUDirect Storage not supported on current platform"},
    {5008, "CU_FILE_IO_NOT_SUPPORTED", "GPUDirect Storage not supported on current file"},
    {5009, "CU_FILE_DEVICE_NOT_SUPPORTED", "GPUDirect Storage not supported on current GPU"},
    {5010, "CU_FILE_NVFS_DRIVER_ERROR", "nvidia-fs driver ioctl error"},
    {5011, "CU_FILE_CUDA_DRIVER_ERROR", "CUDA Driver API error"},
    {5012, "CU_FILE_CUDA_POINTER_INVALID", "invalid device pointer"},
    {5013, "CU_FILE_CUDA_MEMORY_TYPE_INVALID", "invalid pointer memory type"},
    {5014, "CU_FILE_CUDA_POINTER_RANGE_ERROR", "pointer range exceeds allocated address range"},
    {5015, "CU_FILE_CUDA_CONTEXT_MISMATCH", "cuda context mismatch"},
    {5016, "CU_FILE_INVALID_MAPPING_SIZE", "access beyond maximum pinned size"},
    {5017, "CU_FILE_INVALID_MAPPING_RANGE", "access beyond mapped size"},
    {5018, "CU_FILE_INVALID_FILE_TYPE", "unsupported file type"},
    {5019, "CU_FILE_INVALID_FILE_OPEN_FLAG", "unsupported file open flags"},
    {5020, "CU_FILE_DIO_NOT_SET", "fd direct IO not set"},
    {5022, "CU_FILE_INVALID_VALUE", "invalid arguments"},
    {5023, "CU_FILE_MEMORY_ALREADY_REGISTERED", "device pointer already registered"},
    {5024, "CU_FILE_MEMORY_NOT_REGISTERED", "device pointer lookup failure"},
    {5025, "CU_FILE_PERMISSION_DENIED", "driver or file access error"},
    {5026, "CU_FILE_DRIVER_ALREADY_OPEN", "driver is already open"},
    {5027, "CU_FILE_HANDLE_NOT_REGISTERED", "file descriptor is not registered"},
    {5028, "CU_FILE_HANDLE_ALREADY_REGISTERED", "file descriptor is already registered"},
    {5029, "CU_FILE_DEVICE_NOT_FOUND", "GPU device not found"},
    {5030, "CU_FILE_INTERNAL_ERROR", "internal error"},
    {5031, "CU_FILE_GETNEWFD_FAILED", "failed to obtain new file descriptor"},
    {5033, "CU_FILE_NVFS_SETUP_ERROR", "NVFS driver initialization error"},
    {5034, "CU_FILE_IO_DISABLED", "GPUDirect Storage disabled by config on current file"},
    {5035, "CU_FILE_BATCH_SUBMIT_FAILED", "failed to submit batch operation"},
    {5036, "CU_FILE_GPU_MEMORY_PINNING_FAILED", "failed to allocate pinned GPU Memory"},
    {5037, "CU_FILE_BATCH_FULL", "queue full for batch operation"},
    {5038, "CU_FILE_ASYNC_NOT_SUPPORTED", "cuFile stream operation not supported"},
    {5039, "CU_FILE_INTERNAL_BATCH_SETUP_ERROR", "batch setup internal error"},
    {5040, "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR", "batch submit internal error"},
    {5041, "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR", "batch get status internal error"},
    {5042, "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR", "batch cancel internal error"},
    {5043, "CU_FILE_NOMEM_ERROR", "cufile no memory error"},
    {5044, "CU_FILE_IO_ERROR", "cufile io error"},
    {5045, "CU_FILE_INTERNAL_BUF_REGISTER_ERROR", "cufile buf registration error"},
    {5046, "CU_FILE_HASH_OPR_ERROR", "cufile hash operation error"},
    {5047, "CU_FILE_INVALID_CONTEXT_ERROR", "cufile invalid context error"},
    {5048, "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR", "nvfs internal driver error"},
    {5049, "CU_FILE_BATCH_NOCOMPAT_ERROR", "compat mode off error"},
    {5050, "CU_FILE_IO_MAX_ERROR", "GPUDirect Storage Max Error"},
};

std::string op_error_text(int code) {
  for (const auto& entry : cufile_errors)
    if (entry.code == code) return std::string(entry.name) + " (" + std::to_string(code) + "): " + entry.text;
  return "unknown cuFile error (" + std::to_string(code) + ")";
}

struct Loaded {
  // Never unloaded: libcufile keeps worker threads, which a dlclose from a static destructor would race.
  SharedLibrary* library = new SharedLibrary({"libcufile.so.0", "libcufile.so"});
  Cufile api{};
  std::string why;
  bool ok = false;

  void load() {
    if (!library->loaded()) {
      why = "libcufile not found (pip install nvidia-cufile): " + library->why();
      return;
    }
    bool all = true;
    all &= library->bind(api.cuFileDriverOpen, "cuFileDriverOpen", why);
    api.cuFileDriverClose = library->function<decltype(api.cuFileDriverClose)>("cuFileDriverClose_v2");
    if (api.cuFileDriverClose == nullptr) all &= library->bind(api.cuFileDriverClose, "cuFileDriverClose", why);
    all &= library->bind(api.cuFileDriverGetProperties, "cuFileDriverGetProperties", why);
    all &= library->bind(api.cuFileHandleRegister, "cuFileHandleRegister", why);
    all &= library->bind(api.cuFileHandleDeregister, "cuFileHandleDeregister", why);
    all &= library->bind(api.cuFileBufRegister, "cuFileBufRegister", why);
    all &= library->bind(api.cuFileBufDeregister, "cuFileBufDeregister", why);
    all &= library->bind(api.cuFileRead, "cuFileRead", why);
    api.cuFileGetVersion = library->function<decltype(api.cuFileGetVersion)>("cuFileGetVersion");
    ok = all;
  }
};

Loaded& loaded() { return load_once<Loaded>(); }

}  // namespace

const Cufile* cufile() noexcept { return loaded().ok ? &loaded().api : nullptr; }

const std::string& why_no_cufile() noexcept { return loaded().why; }

const std::string& cufile_path() noexcept { return loaded().library->path(); }

std::string cufile_error_text(CufileError error, std::string_view cuda_result_name) {
  std::string text = op_error_text(error.err);
  if (error.err == cufile_cuda_driver_error) text += ": " + std::string(cuda_result_name) + " (" + std::to_string(error.cu_err) + ")";
  return text;
}

std::string cufile_read_error_text(ssize_t result, int error_number) {
  if (result == -1) return std::string(std::strerror(error_number)) + " (errno " + std::to_string(error_number) + ")";
  return op_error_text(static_cast<int>(-result));
}

}  // namespace headrace::shim
