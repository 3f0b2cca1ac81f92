#pragma once
// What a live run is doing, from its session's events.jsonl (docs/sessions.md, `sessions
// show`): the journal holds only finished instances, so a run's starts are read from its
// events, replayed through the same status board as the terminal's status line.

#include "output/progress_loops.hpp"
#include "output/status_board.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace arun::io {

class live_status {
public:
  /// Takes in the text of events.jsonl: the events of the session's latest run count (each
  /// recipe_start begins again); lines that are not events (a torn last one) are passed over.
  void add_events(std::string_view jsonl);

  /// A run's events were seen, and its recipe_end was not.
  bool active() const noexcept { return board_.active(); }
  /// The latest run's counts (status_board::instance_counts).
  status_board::counts counts() const { return board_.instance_counts(); }
  /// The running loops with their counts, in start order.
  std::vector<const detail::loop_progress*> loops() const { return loops_.in_start_order(); }
  /// The status line the run's terminal would show at `now` (wall clock), `columns` wide.
  std::string line(std::chrono::system_clock::time_point now, std::size_t columns) const;

private:
  void add_line(std::string_view line);

  status_board board_;
  detail::loop_tracker loops_;
};

}  // namespace arun::io
