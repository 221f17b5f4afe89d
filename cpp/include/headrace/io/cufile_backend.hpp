// cufile: the backend interface with destinations in GPU memory. Each request is cut into tasks
// (settings.task_size_bytes) that settings.threads workers read with cuFileRead: by DMA from storage
// where GPUDirect Storage works, through cuFile's compatibility mode otherwise (describe() says which).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headrace/io/backend.hpp"
#include "headrace/io/cufile_reader.hpp"
#include "headrace/io/detail/task_runner.hpp"

namespace headrace::io {

class CufileBackend final : public Backend {
 public:
  // A ReadRequest's destination is a CUdeviceptr of context's GPU (cast to a pointer). Throws
  // UnavailableError without cuFile (or when it refuses the file), FileNotFoundError.
  CufileBackend(const std::string& path, const Settings& settings, gpu::CUcontext context);

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::cufile; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override;
  [[nodiscard]] const CufileReader& reader() const noexcept { return reader_; }

 private:
  CufileBackend(CufileReader reader, const Settings& settings);
  [[nodiscard]] detail::TaskOutcome read_task(const detail::ReadTask& task) const;

  Settings settings_;
  CufileReader reader_;
  detail::TaskRunner runner_;  // last: drains before the reader closes
};

}  // namespace headrace::io
