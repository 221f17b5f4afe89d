// The GPU tracer's loop of rounds (private to it and HandOffTrace): step the half-lines, load the units they
// wait for into the cache, again, until none waits for a unit the cache may hold.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"
#include "round_runner.hpp"
#include "slot_table.hpp"
#include "unit_loads.hpp"

namespace headrace::workloads::streamlines::resident {

// Rounds of a single half-line without progress before the cache is declared too small for one step.
inline constexpr unsigned max_idle_rounds = 32;

// Units wanted by the last round that `holds` lets this cache load, most wanted first (ties: lower unit
// first, so runs repeat).
template <typename Holds>
std::vector<std::uint64_t> wanted_units(const RoundState& state, Holds holds) {
  std::vector<std::uint64_t> units;
  for (std::uint64_t u = 0; u < state.wanted.size(); ++u)
    if (state.wanted[u] != 0 && holds(u)) units.push_back(u);
  std::stable_sort(units.begin(), units.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return state.wanted[a] > state.wanted[b]; });
  return units;
}

// Reads `wanted` (most wanted first) into the slots slot_table gives them and waits, so that the next
// round sees them; counted in stats. Returns whether the table had to evict units the last round read.
inline bool load_units(SlotPool& runner, UnitLoads& loads, SlotTable& slot_table, const UnitTable& table,
                const std::vector<std::uint64_t>& wanted, ResidentStats& stats) {
  const auto load_start = headrace::detail::SteadyClock::now();
  bool forced = false;
  for (const auto& [unit, slot] : slot_table.assign(wanted, stats.evictions, forced)) {
    loads.load(unit, slot);
    ++stats.units_loaded;
    stats.bytes_read += table.size[unit];
  }
  loads.wait(runner);
  stats.load_seconds += headrace::detail::seconds_since(load_start);
  return forced;
}

// The lines from state.first_line up to line_count, in rounds (`round(state)` runs one over the state's
// window in `runner`'s pool and returns its counters: steps and lines ended), until each has ended or
// waits for a unit `holds` refuses (one another rank holds); between rounds the units they wait for are
// loaded into the slots. `keep_going(ended)`, asked before every round with the lines ended so far,
// stops it early: false then.
template <typename Round, typename Holds, typename KeepGoing>
bool run_rounds(Round round, SlotPool& runner, UnitLoads& loads, SlotTable& slot_table, RoundState& state,
                const UnitTable& table, std::uint64_t line_count, Holds holds, KeepGoing keep_going, ResidentStats& stats,
                const std::string& path) {
  using Clock = headrace::detail::SteadyClock;
  using headrace::detail::seconds_since;
  std::uint64_t ended = 0;
  for (unsigned idle = 0; state.first_line < line_count;) {
    if (!keep_going(ended)) return false;
    ++state.round;
    const auto advance_start = Clock::now();
    const auto counters = round(state);
    stats.advance_seconds += seconds_since(advance_start);
    ++stats.rounds;
    ended += counters.ended;
    const std::vector<std::uint64_t> wanted = wanted_units(state, holds);
    if (wanted.empty()) {  // every line of the window has ended or waits elsewhere (those before it had): the next lines
      state.first_line += state.window;
      state.window = std::min(state.window, line_count - std::min(line_count, state.first_line));
      continue;
    }
    // Lines that all wait while the cache cannot hold what they need at once thrash: run fewer at once
    // (an operating system lowers its degree of multiprogramming so), and more again once they move.
    const bool progress = counters.steps + counters.ended > 0;
    if (!progress) state.window = std::max<std::uint64_t>(1, state.window / 2);
    idle = progress || state.window > 1 ? 0 : idle + 1;
    HEADRACE_EXPECT(idle < max_idle_rounds, UsageError,
                    path + ": the resident cache of " + std::to_string(stats.slots) + " units of " +
                        std::to_string(table.unit_bytes) + " bytes cannot hold the units of one step of one line; give it more bytes");
    const bool forced = load_units(runner, loads, slot_table, table, wanted, stats);
    if (progress && !forced) state.window = std::min(line_count - state.first_line, 2 * state.window);
  }
  return true;
}

// The flow's velocity at the `count` points the runner started sampling (start_sampling or
// start_sampling_lines) through the cache, in rounds with the units the waiting points want loaded
// between them (most wanted first), as the lines' rounds load theirs. Empty when rounds stop making
// progress (a cache too small for the cells of the points waiting at once): the caller then samples
// them another way. Its reads are not the trace's: they stay out of its counters.
template <typename Units>
std::vector<Vec3> sample_in_rounds(RoundRunner<Units>& runner, UnitLoads& loads, SlotTable& slot_table, RoundState& state,
                                   const UnitTable& table, std::uint64_t count) {
  // A window of points, halved when a round makes no progress and doubled again when one does, as
  // run_rounds' lines: one point's cell needs at most 8 units, so a window of one always moves.
  ResidentStats reads;
  std::uint64_t first = 0, window = count;
  for (unsigned idle = 0; first < count;) {
    ++state.round;
    const SampleCounters counters = runner.sample_round(state, first, window);
    const bool progress = counters.sampled > 0;
    if (counters.waiting == 0) {  // the window is sampled: the next points, more of them
      first += window;
      window = std::min(2 * window, count - first);
      idle = 0;
      continue;
    }
    if (!progress) window = std::max<std::uint64_t>(1, window / 2);
    idle = progress || window > 1 ? 0 : idle + 1;
    if (idle == max_idle_rounds) {  // a cache of fewer units than a cell has corners
      (void)runner.sampled();
      return {};
    }
    const bool forced = load_units(runner, loads, slot_table, table, wanted_units(state, [](std::uint64_t) { return true; }), reads);
    if (progress && !forced) window = std::min(count - first, 2 * window);
  }
  return runner.sampled();
}

}  // namespace headrace::workloads::streamlines::resident
