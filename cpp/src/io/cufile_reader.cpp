#include "headrace/io/cufile_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <utility>

#include "headrace/error.hpp"

namespace headrace::io {
namespace {

constexpr int eagain_retries = 64;
constexpr const char* nvidia_fs_version_path = "/proc/driver/nvidia-fs/version";

std::string hex(std::uint64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

// The session, or nullptr with why; the first call opens it, later calls return the same answer.
struct SharedDriver {
  std::mutex mutex;
  std::shared_ptr<const CufileDriver> driver;  // the process's hold on the session until exit
  std::string why;
  bool tried = false;
};

SharedDriver& shared_driver() {
  static SharedDriver state;
  return state;
}

std::string why_unusable() {
  if (shim::cufile() == nullptr) return shim::why_no_cufile();
  if (gpu::driver() == nullptr) return gpu::why_no_driver();
  if (gpu::device_count() == 0) return "no GPU";
  return {};
}

}  // namespace

CufileDriver::CufileDriver(OpenTag) {
  const shim::Cufile& api = *shim::cufile();
  if (const shim::CufileError error = api.cuFileDriverOpen(); error.err != shim::cufile_success)
    throw UnavailableError(detail::located("cuFileDriverOpen failed: " + shim::cufile_error_text(error, gpu::result_name(error.cu_err)), __FILE__, __LINE__));
  int version = 0;
  if (api.cuFileGetVersion != nullptr && api.cuFileGetVersion(&version).err == shim::cufile_success && version > 0)
    version_ = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  properties_known_ = api.cuFileDriverGetProperties(&properties_).err == shim::cufile_success;
  if (properties_known_ && (properties_.nvfs.major_version != 0 || properties_.nvfs.minor_version != 0)) {
    mode_ = shim::CufileMode::gds;
    mode_reason_ = "nvidia-fs " + std::to_string(properties_.nvfs.major_version) + "." +
                   std::to_string(properties_.nvfs.minor_version) + " serves cuFile (cuFileDriverGetProperties)";
  } else if (!properties_known_ && std::filesystem::exists(nvidia_fs_version_path)) {
    mode_ = shim::CufileMode::gds;
    mode_reason_ = std::string("nvidia-fs kernel module loaded (") + nvidia_fs_version_path + ")";
  } else {
    mode_ = shim::CufileMode::compatibility;
    mode_reason_ = properties_known_
                       ? "no nvidia-fs (cuFileDriverGetProperties reports version 0.0): cuFile reads through the page cache and a bounce buffer"
                       : std::string("no nvidia-fs kernel module (") + nvidia_fs_version_path +
                             "): cuFile reads through the page cache and a bounce buffer";
  }
}

CufileDriver::~CufileDriver() noexcept { (void)shim::cufile()->cuFileDriverClose(); }

std::shared_ptr<const CufileDriver> CufileDriver::shared() {
  SharedDriver& state = shared_driver();
  std::lock_guard lock(state.mutex);
  if (!state.tried) {
    state.tried = true;
    state.why = why_unusable();
    if (state.why.empty()) {
      try {
        state.driver = std::make_shared<const CufileDriver>(OpenTag{});
      } catch (const Error& error) {
        state.why = error.what();
      }
    }
  }
  HEADRACE_EXPECT(state.driver != nullptr, UnavailableError, "cuFile unavailable: " + state.why);
  return state.driver;
}

std::string cufile_unavailable_reason() {
  try {
    (void)CufileDriver::shared();
    return {};
  } catch (const UnavailableError&) {
    std::lock_guard lock(shared_driver().mutex);
    return shared_driver().why;
  }
}

CufileBufferRegistration::CufileBufferRegistration(gpu::CUdeviceptr base, std::size_t size_bytes)
    : driver_(CufileDriver::shared()) {
  HEADRACE_EXPECT(base != 0 && size_bytes > 0, UsageError,
                  "cuFileBufRegister: a null or empty range (" + hex(base) + ", " + std::to_string(size_bytes) + " bytes)");
  const shim::CufileError error = shim::cufile()->cuFileBufRegister(reinterpret_cast<const void*>(base), size_bytes, 0);
  if (error.err != shim::cufile_success)
    throw SystemError(detail::located("cuFileBufRegister of " + std::to_string(size_bytes) + " bytes at " + hex(base) +
                                          " failed: " + shim::cufile_error_text(error, gpu::result_name(error.cu_err)),
                                      __FILE__, __LINE__),
                      EIO);
  base_ = base;
  size_bytes_ = size_bytes;
}

CufileBufferRegistration::~CufileBufferRegistration() noexcept { unregister_buffer(); }

CufileBufferRegistration::CufileBufferRegistration(CufileBufferRegistration&& other) noexcept
    : driver_(std::move(other.driver_)),
      base_(std::exchange(other.base_, 0)),
      size_bytes_(std::exchange(other.size_bytes_, 0)) {}

CufileBufferRegistration& CufileBufferRegistration::operator=(CufileBufferRegistration&& other) noexcept {
  if (this != &other) {
    unregister_buffer();
    driver_ = std::move(other.driver_);
    base_ = std::exchange(other.base_, 0);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

void CufileBufferRegistration::unregister_buffer() noexcept {
  if (base_ != 0) (void)shim::cufile()->cuFileBufDeregister(reinterpret_cast<const void*>(base_));
  base_ = 0;
  size_bytes_ = 0;
  driver_.reset();
}

CufileBufferRegistration register_buffer(gpu::CUdeviceptr base, std::size_t size_bytes) {
  return CufileBufferRegistration(base, size_bytes);
}

CufileReader::CufileReader(const std::string& path, gpu::CUcontext context)
    : driver_(CufileDriver::shared()), path_(path), context_(context) {
  if (context_ != nullptr) gpu::check(gpu::driver()->cuCtxSetCurrent(context_), "cuCtxSetCurrent", path_);
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  } while (fd < 0 && errno == EINTR);
  o_direct_ = fd >= 0;
  open_note_ = "O_DIRECT";
  if (fd < 0 && errno == EINVAL) {
    open_note_ = "the file system refuses O_DIRECT (EINVAL): opened buffered, so cuFile reads it in compatibility mode";
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
  }
  if (fd < 0) {
    const int error_number = errno;
    throw FileNotFoundError(detail::system_message("open", path, error_number, __FILE__, __LINE__), error_number);
  }
  fd_ = detail::FileDescriptor(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0) HEADRACE_THROW_SYSTEM("fstat", path);
  if (S_ISDIR(info.st_mode)) throw FileNotFoundError(detail::system_message("open", path, EISDIR, __FILE__, __LINE__), EISDIR);
  if (S_ISBLK(info.st_mode)) {
    const off_t end = ::lseek(fd, 0, SEEK_END);
    if (end < 0) HEADRACE_THROW_SYSTEM("lseek", path);
    file_size_ = static_cast<std::uint64_t>(end);
  } else {
    file_size_ = static_cast<std::uint64_t>(info.st_size);
  }
  shim::CufileDescription description;
  description.handle.fd = fd;
  if (const shim::CufileError error = shim::cufile()->cuFileHandleRegister(&handle_, &description);
      error.err != shim::cufile_success) {
    handle_ = nullptr;
    // cuFile could not take the file (in compatibility mode too): it identifies the file system of the
    // file's block device through udev, which a container without /run/udev cannot answer.
    throw UnavailableError(detail::located(path + ": cuFile cannot read this file: cuFileHandleRegister failed (" +
                                               open_note_ + "): " + shim::cufile_error_text(error, gpu::result_name(error.cu_err)) +
                                               " (cufile.log says why; a container needs /run/udev for cuFile "
                                               "to identify the file system)",
                                           __FILE__, __LINE__));
  }
}

CufileReader::~CufileReader() noexcept { close(); }

CufileReader::CufileReader(CufileReader&& other) noexcept
    : driver_(std::move(other.driver_)),
      path_(std::move(other.path_)),
      context_(other.context_),
      fd_(std::move(other.fd_)),
      handle_(std::exchange(other.handle_, nullptr)),
      file_size_(other.file_size_),
      o_direct_(other.o_direct_),
      open_note_(std::move(other.open_note_)) {}

void CufileReader::close() noexcept {
  if (handle_ != nullptr) shim::cufile()->cuFileHandleDeregister(std::exchange(handle_, nullptr));
  fd_.close();
  driver_.reset();
}

shim::CufileMode CufileReader::mode() const noexcept {
  if (driver_ == nullptr) return shim::CufileMode::unavailable;
  return driver_->mode() == shim::CufileMode::gds && o_direct_ ? shim::CufileMode::gds : shim::CufileMode::compatibility;
}

std::string CufileReader::mode_reason() const {
  if (driver_ == nullptr) return "closed";
  if (driver_->mode() == shim::CufileMode::gds && !o_direct_) return open_note_;
  return driver_->mode_reason();
}

std::size_t CufileReader::read(gpu::CUdeviceptr destination, std::size_t size, std::uint64_t file_offset) const {
  return read_into(destination, 0, size, file_offset);
}

std::size_t CufileReader::read(const CufileBufferRegistration& buffer, std::size_t buffer_offset, std::size_t size,
                               std::uint64_t file_offset) const {
  HEADRACE_EXPECT(buffer.registered() && buffer_offset <= buffer.size_bytes() && size <= buffer.size_bytes() - buffer_offset,
                  UsageError,
                  path_ + ": a read of " + std::to_string(size) + " bytes at offset " + std::to_string(buffer_offset) +
                      " of a registered buffer of " + std::to_string(buffer.size_bytes()) + " bytes");
  return read_into(buffer.base(), buffer_offset, size, file_offset);
}

std::size_t CufileReader::read_into(gpu::CUdeviceptr base, std::size_t base_offset, std::size_t size,
                                    std::uint64_t file_offset) const {
  HEADRACE_EXPECT(handle_ != nullptr, UsageError, path_ + ": read from a closed CufileReader");
  if (context_ != nullptr) gpu::check(gpu::driver()->cuCtxSetCurrent(context_), "cuCtxSetCurrent", path_);
  const shim::Cufile& api = *shim::cufile();
  std::size_t done = 0;
  int retries = 0;
  while (done < size) {
    errno = 0;
    const ssize_t result = api.cuFileRead(handle_, reinterpret_cast<void*>(base), size - done,
                                          static_cast<off_t>(file_offset + done), static_cast<off_t>(base_offset + done));
    const int error_number = errno;
    if (result > 0) {
      done += static_cast<std::size_t>(result);
      continue;
    }
    if (result == 0) break;  // end of file
    if (result == -1 && (error_number == EINTR || (error_number == EAGAIN && ++retries <= eagain_retries))) continue;
    throw SystemError(detail::located(path_ + ": cuFileRead at offset " + std::to_string(file_offset + done) + " of " +
                                          std::to_string(size - done) + " bytes (a read of " + std::to_string(size) +
                                          " bytes at offset " + std::to_string(file_offset) + " into " +
                                          hex(base + base_offset) + ") failed: " +
                                          shim::cufile_read_error_text(result, error_number),
                                      __FILE__, __LINE__),
                      result == -1 && error_number != 0 ? error_number : EIO);
  }
  return done;
}

}  // namespace headrace::io
