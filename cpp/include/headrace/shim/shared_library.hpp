// Run-time loading of GPU libraries (CUDA driver, NVML, cuFile, nvCOMP), so that headrace builds and
// runs on a machine without them and says why a path is unavailable instead of failing to load.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace headrace::shim {

// Directories searched before the system's (Python adds the lib folders of NVIDIA's wheels).
void add_library_directory(const std::string& directory);
[[nodiscard]] std::vector<std::string> library_directories();

// A dlopen handle: move-only, closed by its destructor.
class SharedLibrary {
 public:
  // Tries each name in each added directory, then through the system's search; on failure the
  // result is not loaded() and why() holds dlerror() of the last try.
  explicit SharedLibrary(const std::vector<std::string>& names);
  ~SharedLibrary() noexcept;
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  [[nodiscard]] bool loaded() const noexcept { return handle_ != nullptr; }
  [[nodiscard]] const std::string& why() const noexcept { return why_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // The symbol, or nullptr.
  [[nodiscard]] void* symbol(const char* name) const noexcept;
  template <typename Function>
  [[nodiscard]] Function function(const char* name) const noexcept {
    return reinterpret_cast<Function>(symbol(name));
  }
  // Sets `slot` to the symbol `name`; when there is none, says so in `why` (unless it already names a
  // missing symbol) and returns false.
  template <typename Function>
  bool bind(Function& slot, const char* name, std::string& why) const {
    slot = function<Function>(name);
    if (slot == nullptr && why.empty()) why = path_ + " has no " + name;
    return slot != nullptr;
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string why_;
};

// The process's one `Loader`, its load() run once on first use (whichever thread comes first) and never
// destroyed: the libraries' own threads may outlive static destructors.
template <class Loader>
Loader& load_once() {
  static Loader& loader = *new Loader;
  static std::once_flag once;
  std::call_once(once, [] { loader.load(); });
  return loader;
}

}  // namespace headrace::shim
