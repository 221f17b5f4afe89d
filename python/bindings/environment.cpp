// Settings, library search directories and the GPU environment report (headrace info).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "headrace/detail/thread_name.hpp"
#include "headrace/shim/gpu_environment.hpp"
#include "headrace/shim/shared_library.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {
nb::dict library_dict(const shim::LibraryStatus& status) {
  nb::dict d;
  d["available"] = status.available;
  d["path"] = status.path;
  d["version"] = status.version;
  d["why"] = status.why;
  return d;
}
}  // namespace

void bind_environment(nb::module_& m) {
  m.def("add_library_directory", &shim::add_library_directory, "directory"_a,
        "Searched before the system's when GPU libraries are loaded at run time.");
  m.def("gpu_environment", [] {
    shim::GpuEnvironment env;
    {
      nb::gil_scoped_release release;
      env = shim::query_gpu_environment();
    }
    nb::dict d;
    d["cuda_driver"] = library_dict(env.cuda_driver);
    d["nvml"] = library_dict(env.nvml);
    d["cuda_runtime"] = library_dict(env.cuda_runtime);
    d["cufile"] = library_dict(env.cufile);
    d["nvcomp"] = library_dict(env.nvcomp);
    d["nvcomp_cpu"] = library_dict(env.nvcomp_cpu);
    d["nccl"] = library_dict(env.nccl);
    d["cufile_mode"] = shim::to_string(env.cufile_mode);
    d["cufile_mode_reason"] = env.cufile_mode_reason;
    nb::list gpus;
    for (const auto& gpu : env.gpus) {
      nb::dict g;
      g["ordinal"] = gpu.ordinal;
      g["name"] = gpu.name;
      g["memory_bytes"] = gpu.memory_bytes;
      g["compute_capability"] = std::to_string(gpu.compute_major) + "." + std::to_string(gpu.compute_minor);
      g["pci_bus_id"] = gpu.pci_bus_id;
      gpus.append(g);
    }
    d["gpus"] = gpus;
    return d;
  }, "Devices, driver/runtime versions, cuFile mode and nvCOMP, each loaded at run time.");
  m.def("thread_stages", [] {
    nb::dict stages;
    for (const auto& [name, stage] : detail::thread_stages) stages[nb::str(name.data(), name.size())] = nb::str(stage.data(), stage.size());
    return stages;
  }, "The engine's thread names and the stage each one's CPU time counts toward.");
}

}  // namespace headrace::python
