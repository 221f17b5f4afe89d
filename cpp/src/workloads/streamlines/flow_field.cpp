#include "headrace/workloads/streamlines/flow_field.hpp"

#include <variant>

#include "headrace/error.hpp"

namespace headrace::workloads::streamlines {

FlowField open_flow(const std::string& path, std::uint32_t frame) {
  FlowField flow{format::Container::open(path), 0, frame, {}};
  HEADRACE_EXPECT(frame < flow.container.frames().size(), UsageError,
                  path + ": no frame " + std::to_string(frame) + " (" + std::to_string(flow.container.frames().size()) +
                      " frames)");
  flow.field = flow.container.field_index("velocity");
  const auto found = flow.container.attributes().find("layout");
  const auto* name = found == flow.container.attributes().end() ? nullptr : std::get_if<std::string>(&found->second);
  HEADRACE_EXPECT(name != nullptr && (*name == "blocks" || *name == "hilbert"), UsageError,
                  path + ": expected a flow field with attribute layout \"blocks\" or \"hilbert\"");
  flow.layout = *name;
  return flow;
}

}  // namespace headrace::workloads::streamlines
