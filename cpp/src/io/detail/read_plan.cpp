#include "headrace/io/detail/read_plan.hpp"

#include <algorithm>

#include "headrace/error.hpp"

namespace headrace::io::detail {

std::vector<ReadTask> plan_reads(const std::vector<ReadRequest>& requests, std::uint64_t file_size_bytes,
                                 std::uint64_t task_size_bytes, const std::string& path, ReadBatch& batch,
                                 TaskCut cut) {
  std::vector<ReadTask> tasks;
  tasks.reserve(requests.size());
  for (std::size_t index = 0; index < requests.size(); ++index) {
    const ReadRequest& request = requests[index];
    if (request.size_bytes == 0) {
      batch.complete(index, ReadStatus{});
      continue;
    }
    // Written without offset + size so that a huge size cannot wrap around.
    const std::uint64_t readable_bytes =
        request.file_offset < file_size_bytes ? std::min(request.size_bytes, file_size_bytes - request.file_offset) : 0;
    const bool passes_end = readable_bytes < request.size_bytes;

    const std::size_t first_task = tasks.size();
    auto* destination = static_cast<std::byte*>(request.destination);
    for (std::uint64_t done = 0; done < readable_bytes;) {
      const std::uint64_t offset = request.file_offset + done;
      const std::uint64_t room = cut == TaskCut::at_file_offsets ? task_size_bytes - offset % task_size_bytes : task_size_bytes;
      const std::uint64_t size = std::min(readable_bytes - done, room);
      tasks.push_back(ReadTask{index, offset, size, destination + done});
      done += size;
    }
    batch.set_parts(index, static_cast<std::uint32_t>(tasks.size() - first_task + (passes_end ? 1 : 0)));
    if (passes_end) {
      batch.complete_part(index, 0, ReadStatus::end_of_file_error_number,
                          end_of_file_message(path, request.file_offset, request.size_bytes, file_size_bytes,
                                              __FILE__, __LINE__));
    }
  }
  return tasks;
}

std::string end_of_file_message(const std::string& path, std::uint64_t file_offset, std::uint64_t size_bytes,
                                std::uint64_t end_of_file_offset, const char* source_file, int source_line) {
  return headrace::detail::bad_data_message(path, file_offset, std::to_string(size_bytes) + " bytes",
                                            "end of file at " + std::to_string(end_of_file_offset), source_file,
                                            source_line);
}

std::string read_error_message(const char* call, const std::string& path, std::uint64_t file_offset, int error_number,
                               const char* source_file, int source_line) {
  return headrace::detail::system_message(call, path + ", offset " + std::to_string(file_offset), error_number,
                                          source_file, source_line);
}

}  // namespace headrace::io::detail
