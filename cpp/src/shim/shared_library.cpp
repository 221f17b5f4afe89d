#include "headrace/shim/shared_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <utility>

namespace headrace::shim {
namespace {
std::mutex directories_mutex;
std::vector<std::string>& directories() {
  static std::vector<std::string> list;
  return list;
}
}  // namespace

void add_library_directory(const std::string& directory) {
  std::lock_guard lock(directories_mutex);
  for (const auto& known : directories())
    if (known == directory) return;
  directories().push_back(directory);
}

std::vector<std::string> library_directories() {
  std::lock_guard lock(directories_mutex);
  return directories();
}

SharedLibrary::SharedLibrary(const std::vector<std::string>& names) {
  std::vector<std::string> candidates;
  for (const auto& directory : library_directories())
    for (const auto& name : names) candidates.push_back(directory + "/" + name);
  for (const auto& name : names) candidates.push_back(name);
  for (const auto& candidate : candidates) {
    handle_ = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      link_map* map = nullptr;
      path_ = ::dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr ? map->l_name : candidate;
      why_.clear();
      return;
    }
    const char* error = ::dlerror();
    why_ = error != nullptr ? error : candidate + ": cannot be loaded";
  }
}

SharedLibrary::~SharedLibrary() noexcept {
  if (handle_ != nullptr) ::dlclose(handle_);
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)), why_(std::move(other.why_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
    why_ = std::move(other.why_);
  }
  return *this;
}

void* SharedLibrary::symbol(const char* name) const noexcept {
  return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
}

}  // namespace headrace::shim
