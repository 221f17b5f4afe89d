#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::workloads::streamlines {

const char* to_string(Termination termination) noexcept {
  switch (termination) {
    case Termination::max_steps: return "max_steps";
    case Termination::left_domain: return "left_domain";
    case Termination::stagnant: return "stagnant";
    case Termination::stopped: return "stopped";
  }
  return "?";
}

}  // namespace headrace::workloads::streamlines
