// What a slot holds for a frame of a container: every chunk of the streamed fields, each field into
// its own buffer of the slot (the buffers sized for the field's largest frame). FrameStream's slots.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "headrace/engine/slot_stream.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"

namespace headrace::engine {

// destinations[slot][k]: the address of field fields[k]'s buffer in that slot, in `memory`. The table is
// shared with the consumer, which may point a slot it holds at other buffers before releasing it (a
// frame whose arrays outlive it keeps its buffers); the fill reads it when it refills the slot. The
// container must outlive the fill.
using SlotDestinations = std::vector<std::vector<std::uintptr_t>>;

[[nodiscard]] inline SlotFill frame_fill(const format::Container& container, FileId file, std::vector<std::uint32_t> fields,
                                         std::shared_ptr<const SlotDestinations> destinations, queue::MemoryKind memory) {
  for (const auto& slot : *destinations)
    HEADRACE_EXPECT(slot.size() == fields.size(), UsageError,
                    "a slot needs one buffer per streamed field: " + std::to_string(fields.size()) + " fields, " +
                        std::to_string(slot.size()) + " buffers");
  return [&container, file, fields = std::move(fields), destinations = std::move(destinations), memory](
             std::uint64_t unit, std::uint32_t slot) {
    const auto frame = static_cast<std::uint32_t>(unit);
    std::vector<Request> requests;
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const std::uint32_t field = fields[k];
      const std::uint64_t element_bytes = container.fields()[field].element_bytes();
      std::uint64_t number = container.frame_field(frame, field).first_chunk;
      for (const format::ChunkInfo& chunk : container.chunks_of(frame, field)) {
        Request r = queue::chunk_request(
            file, chunk, {memory, (*destinations)[slot][k] + chunk.first_element * element_bytes, chunk.raw_size});
        r.label = queue::chunk_label(container, frame, field, number++, chunk);
        requests.push_back(std::move(r));
      }
    }
    return requests;
  };
}

}  // namespace headrace::engine
