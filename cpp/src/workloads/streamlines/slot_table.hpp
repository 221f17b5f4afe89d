// The resident cache's bookkeeping between the GPU tracer's rounds, private to it and HandOffTrace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

// The cache's bookkeeping between rounds: which unit each slot holds, and which units to load next.
class SlotTable {
 public:
  SlotTable(std::uint64_t slots, RoundState& state) : owner_(slots, -1), loaded_round_(slots, 0), state_(&state) {
    for (std::uint64_t s = slots; s-- > 0;) free_.push_back(static_cast<std::uint32_t>(s));
  }

  // Units to load for the wanted ones, most wanted first, each given a slot: free slots, then slots
  // whose unit the round just run neither read nor received (least recent first). When that leaves
  // none, `forced`: the least recent of all, up to half the cache.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> assign(const std::vector<std::uint64_t>& wanted,
                                                              std::uint64_t& evictions, bool& forced);

 private:
  // The last round that read the slot's unit, or after which it was loaded.
  [[nodiscard]] std::uint32_t recency(std::uint32_t slot) const {
    return std::max(state_->last_used[static_cast<std::uint64_t>(owner_[slot])], loaded_round_[slot]);
  }

  std::vector<std::int64_t> owner_;          // per slot: its unit, or -1
  std::vector<std::uint32_t> loaded_round_;  // per slot: the round after which its unit was loaded
  std::vector<std::uint32_t> free_;
  RoundState* state_;
};

}  // namespace headrace::workloads::streamlines::resident
