#pragma once
// What the live status line says about a running recipe (ninja's `[done/total]`, cargo's
// progress): where the top-level sequence is, each running foreach's counts, how many
// children run and failed, the elapsed time, an estimate of the time left from this run's own
// rate, the instances that outlived the rest and the top-level steps running, with their age
// (docs/running.md, "The status line"). Pure: fed events and a clock, it renders text for a
// given width; progress_printer draws it, `arun sessions show` replays a live run's events.

#include "output/progress_loops.hpp"

#include <arun/events.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun::io {

class status_board {
public:
  using clock = std::chrono::steady_clock;

  /// Takes in one event, seen at `now`.
  void on_event(const event& e, clock::time_point now);

  /// The status line for `columns` columns: never longer (counted in characters), and the
  /// counters are the last thing cut: names are shortened first, then labels made terse.
  /// `loops` are the running loops (progress_printer's tracker). With `color`, failures are
  /// red (escape codes do not count toward the width). Empty when no run is going.
  std::string render(const detail::loop_tracker& loops, std::size_t columns, clock::time_point now,
                     bool color) const;

  /// Instances waiting where they run (a Slurm job held or pending: "pending (JobHeldAdmin)"),
  /// named first, with their note instead of their age.
  void set_notes(std::map<std::string, std::string, std::less<>> notes) { notes_ = std::move(notes); }

  /// A run is going (between the outermost recipe_start and its recipe_end).
  bool active() const noexcept { return started_.has_value(); }

  /// The bash and agent instances running now (inside loops and sub-recipes: top-level steps
  /// are named anyway) that outlived the rest (`outlived`), oldest first, at most `most`.
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> outliving(clock::time_point now,
                                                                         std::size_t most = 2) const;

  /// What runs and ended in this run: bash and agent instances running, of those that ended
  /// how many failed, and how many instances a resume took from the journal instead of running.
  struct counts {
    std::size_t running = 0, finished = 0, failed = 0, kept = 0;
  };
  counts instance_counts() const;

private:
  int depth_ = 0;                            // nested recipe_start/recipe_end (sub-recipes)
  std::optional<clock::time_point> started_;
  std::optional<std::size_t> top_total_;     // top-level steps of the recipe
  std::set<std::string, std::less<>> top_seen_;  // top-level instances started or ended
  std::map<std::string, clock::time_point, std::less<>> top_running_;  // top-level steps (not loops) running
  std::map<std::string, clock::time_point, std::less<>> loop_started_;  // loops, for the ETA
  std::map<std::string, clock::time_point, std::less<>> children_running_;  // bash and agent instances running an attempt
  std::set<std::string, std::less<>> iterations_running_;  // loop iterations started in this run
  std::map<std::string, std::size_t, std::less<>> instant_;  // loop -> iterations that ended without running here
  std::size_t kept_ = 0;  // iterations a resume took from the journal
  // The last durations of bash and agent instances, per step: `fan[3]/build` is judged
  // against the other `fan[]/build`s, never against a faster loop's items.
  struct duration_ring {
    std::vector<std::chrono::nanoseconds> last;
    std::size_t next = 0;  // where the next one goes in `last`
  };
  std::map<std::string, duration_ring, std::less<>> recent_;  // by step_shape()
  std::size_t finished_ = 0;                      // bash and agent instances ended after running here
  void add_duration(std::string_view instance, std::chrono::nanoseconds d);
  std::optional<std::chrono::nanoseconds> typical_duration(std::string_view instance) const;  // the median
  std::map<std::string, std::string, std::less<>> notes_;  // instance -> what it waits for
  std::size_t failed_ = 0;                   // bash, agent and gate instances that failed
  /// Per-provider limits: each group's children running and effective limit (0: none).
  struct group_count {
    int running = 0;
    int limit = 0;
  };
  std::map<std::string, group_count, std::less<>> groups_;
  std::map<std::string, std::string, std::less<>> group_of_;  // running instance -> its group
  void child_ended(const std::string& instance);
  /// What the run's agent calls spent so far, and its budget (the latest event's).
  std::optional<event::spend_state> spend_;
};

/// The status line's spend: `$0.0041/$0.0100` (against a cost budget; a nonzero amount never
/// reads `$0.00`), then `118k tok` (`/2000k` with a token budget); an unknown cost is left out.
std::vector<std::string> spend_texts(const event::spend_state& spend);

/// `0:42`, `12:03`, `1:02:03`: elapsed and remaining times.
std::string clock_duration(std::chrono::nanoseconds d);

/// The time a loop still needs at this run's own rate: of `items`, `done` ended, `kept` of
/// them taken from the journal by a resume (they took none of this run's `spent` time). None
/// when nothing is left or no iteration of this run ended yet; at least a second otherwise.
std::optional<std::chrono::nanoseconds> loop_time_left(std::size_t items, std::size_t done, std::size_t kept,
                                                       std::chrono::nanoseconds spent);

/// The step an instance is of: its id without the loop indices (`fan[3]/x[7]` -> `fan[]/x[]`).
std::string step_shape(std::string_view instance);

/// Whether an instance running for `age` outlived the rest: more than twice the `typical`
/// (median) duration of those of its step that ended, and at least 5 s; with none ended, 10 s.
bool outlived(std::chrono::nanoseconds age, std::optional<std::chrono::nanoseconds> typical);

}  // namespace arun::io
