#include "headrace/probe/io_path.hpp"

#include <linux/magic.h>
#include <sys/statfs.h>

#include <algorithm>
#include <optional>
#include <string>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/error.hpp"

namespace headrace::probe {
namespace {

// The name of the RAM file system holding path, or nullopt for any other.
std::optional<std::string> ram_file_system(const std::string& path) {
  struct statfs info {};
  if (::statfs(path.c_str(), &info) != 0) HEADRACE_THROW_SYSTEM("statfs", path);
  if (static_cast<unsigned long>(info.f_type) == TMPFS_MAGIC) return std::string("tmpfs");
  if (static_cast<unsigned long>(info.f_type) == RAMFS_MAGIC) return std::string("ramfs");
  return std::nullopt;
}

void add_note(std::string& note, const std::string& sentence) {
  if (!note.empty()) note += "; ";
  note += sentence;
}

}  // namespace

std::string IoPath::describe() const {
  std::string text = io::to_string(backend);
  text += o_direct ? " O_DIRECT" : " buffered";
  if (backend != io::BackendKind::uring) text += " (fallback)";
  return text;
}

IoPath choose_io_path(const std::string& path, bool strict) {
  IoPath chosen;
  const auto o_direct_reason = io::unavailable_reason(io::BackendKind::direct, path);
  chosen.o_direct = !o_direct_reason.has_value();
  if (o_direct_reason) {
    chosen.cache_state = CacheState::hot;
    add_note(chosen.note, *o_direct_reason + "; buffered reads of a file warmed into the page cache (hot)");
  }
  if (const auto file_system = ram_file_system(path)) {
    chosen.cache_state = CacheState::hot;
    add_note(chosen.note, path + " is on " + *file_system + " (RAM): every read is served from memory (hot)");
  }

  try {
    // Opening one is the only complete test: liburing present, io_uring allowed, the file readable.
    (void)io::open_backend(io::BackendKind::uring, path,
                           backend_options(chosen, headrace::detail::io_alignment_bytes, 1));
  } catch (const UnavailableError& error) {
    chosen.backend = chosen.o_direct ? io::BackendKind::direct : io::BackendKind::posix;
    add_note(chosen.note, std::string("io_uring unavailable (") + error.what() + "): " +
                              io::to_string(chosen.backend) + " backend with threads x queue depth workers");
  }
  HEADRACE_EXPECT(!strict || !chosen.is_fallback(), UnavailableError,
                  "probe (strict): cannot read " + path + " cold through io_uring: " + chosen.note);
  return chosen;
}

io::BackendOptions backend_options(const IoPath& io_path, std::uint64_t block_size_bytes, unsigned queue_depth) {
  io::BackendOptions options;
  auto& knobs = options.settings;
  knobs.task_size_bytes = block_size_bytes;  // one request, one read: never split
  knobs.queue_depth = queue_depth;
  knobs.submit_batch = std::min(8u, queue_depth);
  knobs.uring_o_direct = io_path.o_direct;
  knobs.threads = queue_depth;  // thread-pool fallbacks: queue_depth workers per probe thread
  knobs.validate();
  return options;
}

}  // namespace headrace::probe
