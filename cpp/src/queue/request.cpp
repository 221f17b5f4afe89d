#include "headrace/queue/request.hpp"

namespace headrace::queue {

const char* to_string(RequestState state) noexcept {
  switch (state) {
    case RequestState::enqueued: return "enqueued";
    case RequestState::submitted: return "submitted";
    case RequestState::reading: return "reading";
    case RequestState::copying: return "copying";
    case RequestState::done: return "done";
    case RequestState::failed: return "failed";
    case RequestState::cancelled: return "cancelled";
  }
  return "?";
}

const char* to_string(ReadSource source) noexcept {
  switch (source) {
    case ReadSource::none: return "none";
    case ReadSource::page_cache: return "page-cache";
    case ReadSource::disk: return "disk";
    case ReadSource::buffered: return "buffered";
    case ReadSource::pinned: return "pinned";
    case ReadSource::cufile: return "cufile";
  }
  return "?";
}

}  // namespace headrace::queue
