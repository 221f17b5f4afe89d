// The names the engine gives its threads, so a process's CPU time can be told apart by stage: Linux
// keeps each thread's name and CPU seconds under /proc/self/task (headrace.measurement.cpu_by_stage).
// A name is at most 15 characters, Linux's limit.
#pragma once

#include <array>
#include <string_view>
#include <utility>

namespace headrace::detail {

inline constexpr const char* reader_thread_name = "hr-read";          // a backend's reads (pread, O_DIRECT, mmap copies)
inline constexpr const char* uring_thread_name = "hr-uring";          // io_uring's submitter and reaper
inline constexpr const char* read_ahead_thread_name = "hr-read-ahead";  // the kernel asked to read ahead
inline constexpr const char* checker_thread_name = "hr-check";        // checksums and CPU decoding
inline constexpr const char* finisher_thread_name = "hr-finish";      // a lane's checks, decoding and copies
inline constexpr const char* dispatcher_thread_name = "hr-dispatch";  // planning and submitting flights
inline constexpr const char* completer_thread_name = "hr-complete";   // completing copies on the GPU
inline constexpr const char* holder_thread_name = "hr-hold";          // page-locking a held copy

// Each name and the stage whose CPU time it counts toward.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 8> thread_stages{{
    {reader_thread_name, "io"},
    {uring_thread_name, "io"},
    {read_ahead_thread_name, "io"},
    {checker_thread_name, "finish"},
    {finisher_thread_name, "finish"},
    {dispatcher_thread_name, "engine"},
    {completer_thread_name, "engine"},
    {holder_thread_name, "engine"},
}};

// Names the calling thread (best effort: a name is a label, never a reason to fail).
void name_this_thread(const char* name) noexcept;

}  // namespace headrace::detail
