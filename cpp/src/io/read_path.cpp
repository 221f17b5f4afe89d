#include "headrace/io/read_path.hpp"

#include <algorithm>
#include <cstdio>

#include "headrace/error.hpp"
#include "headrace/io/uring_backend.hpp"

namespace headrace::io {
namespace {

std::string gigabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

}  // namespace

void ReadPathOptions::validate() const {
  settings.validate();
  HEADRACE_EXPECT(!forced || cache_policy == CachePolicy::auto_, UsageError,
                  std::string("cache_policy=") + to_string(cache_policy) + " needs the read path (backend auto); backend " +
                      to_string(*forced) + " decides alone where its bytes come from");
}

FileReadPath::FileReadPath(const std::string& path, const ReadPathOptions& options)
    : path_(path), policy_(options.cache_policy) {
  options.validate();
  const BackendOptions backend_options{options.settings};
  if (options.forced) {
    buffered_ = open_backend(*options.forced, path, backend_options);
    forced_ = true;
    const bool o_direct = *options.forced == BackendKind::direct ||
                          (*options.forced == BackendKind::uring && options.settings.uring_o_direct);
    forced_route_ = o_direct ? ReadRoute::forced_direct : ReadRoute::forced_buffered;
    return;
  }
  buffered_ = open_backend(BackendKind::posix, path, backend_options);
  residency_ = std::make_unique<PageCacheResidency>(path);
  if (policy_ == CachePolicy::use) return;
  if (policy_ == CachePolicy::keep) {
    // Half of what the page cache may take: the file kept must leave room for everything else's pages.
    const std::uint64_t memory = options.page_cache_bytes ? options.page_cache_bytes : memory_for_page_cache();
    const std::uint64_t size = residency_->file_size();
    keeps_ = size <= memory / 2;
    cache_choice_ = (keeps_ ? "kept: its " : "uncached reads O_DIRECT: its ") + gigabytes(size) +
                    (keeps_ ? " fit half of the " : " exceed half of the ") + gigabytes(memory) + " the page cache may take";
  }
  // Uncached ranges: io_uring with O_DIRECT, else O_DIRECT on threads, else buffered (said).
  Settings direct_settings = options.settings;
  direct_settings.uring_o_direct = true;
  const auto no_o_direct = unavailable_reason(BackendKind::direct, path);
  const auto no_uring = uring_unavailable_reason(direct_settings);
  if (keeps_) {
    // Kept reads wait for pages the kernel reads ahead: io_uring's buffered reads without a thread each,
    // else four threads (16 threads' preads of one kept file spent 2.5 to 3 CPU seconds a GB, io_uring
    // 0.6 and four threads 0.65 at the same rate; docs/results.md).
    Settings kept_settings = options.settings;
    kept_settings.uring_o_direct = false;
    kept_settings.threads = std::min(kept_settings.threads, 4u);
    kept_ = open_backend(no_uring ? BackendKind::posix : BackendKind::uring, path, BackendOptions{kept_settings});
    if (options.read_ahead_bytes > 0)
      read_ahead_ = std::make_unique<ReadAhead>(path, residency_->file_size(), options.read_ahead_bytes);
    cache_choice_ += std::string("; uncached reads ") + (no_uring ? "by threads" : "by io_uring") + ", buffered, " +
                     (read_ahead_ ? "the kernel " + std::to_string(options.read_ahead_bytes >> 20) + " MiB ahead" : "no read-ahead");
  }
  if (!no_o_direct && !no_uring) {
    direct_ = open_backend(BackendKind::uring, path, BackendOptions{direct_settings});
    return;
  }
  if (!no_o_direct) {
    fallback_ = "uncached reads by O_DIRECT on threads (io_uring unavailable: " + *no_uring + ")";
    direct_ = open_backend(BackendKind::direct, path, backend_options);
  } else {
    fallback_ = "uncached reads buffered (O_DIRECT unavailable: " + *no_o_direct + ")";
  }
  HEADRACE_EXPECT(!options.strict, UnavailableError, path + ": " + fallback_ + "; strict forbids the fallback");
}

ReadRoute FileReadPath::route(std::uint64_t offset, std::uint64_t size) const {
  if (forced_) return forced_route_;
  if (!direct_) return ReadRoute::cached;
  if (policy_ == CachePolicy::bypass) return ReadRoute::direct;
  if (residency_->fully_resident(offset, size)) return ReadRoute::cached;
  return keeps_ ? ReadRoute::kept : ReadRoute::direct;
}

void FileReadPath::will_read(ReadRoute route, std::uint64_t offset, std::uint64_t size) const {
  if (route == ReadRoute::kept && read_ahead_) read_ahead_->want(offset + size);
}

Backend& FileReadPath::backend(ReadRoute route) const {
  if (route == ReadRoute::direct) return *direct_;
  return route == ReadRoute::kept ? *kept_ : *buffered_;
}

}  // namespace headrace::io
