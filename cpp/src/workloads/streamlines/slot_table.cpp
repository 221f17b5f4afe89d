#include "slot_table.hpp"

#include <algorithm>

namespace headrace::workloads::streamlines::resident {

std::vector<std::pair<std::uint64_t, std::uint32_t>> SlotTable::assign(const std::vector<std::uint64_t>& wanted,
                                                                   std::uint64_t& evictions, bool& forced) {
  std::vector<std::uint32_t> stale, fresh;
  for (std::uint32_t s = 0; s < owner_.size(); ++s)
    if (owner_[s] >= 0) (recency(s) < state_->round ? stale : fresh).push_back(s);
  auto least_recent = [&](std::uint32_t a, std::uint32_t b) {
    return std::pair(recency(a), owner_[a]) < std::pair(recency(b), owner_[b]);
  };
  std::sort(stale.begin(), stale.end(), least_recent);
  std::sort(fresh.begin(), fresh.end(), least_recent);
  std::uint64_t room = free_.size() + stale.size();
  forced = room == 0;
  if (forced) room = std::max<std::uint64_t>(1, owner_.size() / 2);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> loads;
  std::size_t next_stale = 0, next_fresh = 0;
  for (const std::uint64_t unit : wanted) {
    if (loads.size() == room) break;
    std::uint32_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = next_stale < stale.size() ? stale[next_stale++] : fresh[next_fresh++];
      state_->slot_of_unit[static_cast<std::uint64_t>(owner_[slot])] = -1;
      ++evictions;
    }
    owner_[slot] = static_cast<std::int64_t>(unit);
    loaded_round_[slot] = state_->round;
    state_->slot_of_unit[unit] = static_cast<std::int32_t>(slot);
    loads.emplace_back(unit, slot);
  }
  return loads;
}

}  // namespace headrace::workloads::streamlines::resident
