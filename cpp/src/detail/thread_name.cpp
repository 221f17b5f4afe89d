#include "headrace/detail/thread_name.hpp"

#include <pthread.h>

namespace headrace::detail {

void name_this_thread(const char* name) noexcept { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace headrace::detail
