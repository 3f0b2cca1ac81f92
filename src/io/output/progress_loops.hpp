#pragma once
// Loop bookkeeping for progress: which loops run, how many iterations are done, running and
// failed, from instance ids alone (docs/reference/formats.md, "Conventions": `fan[3]`,
// `fan[3]/child`, `call/fan[3]`).

#include <arun/events.hpp>
#include <arun/results.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io::detail {

/// True when `id` names an instance inside some loop iteration (it contains `[`; step ids
/// cannot, docs/reference/recipe.md, "Fields of every step").
bool inside_iteration(std::string_view id) noexcept;

/// The innermost loop instance `id` runs in: "fan" for `fan[3]` and `fan[3]/a/b`,
/// "o[2]/i" for `o[2]/i[5]/x`; nullopt outside loops.
std::optional<std::string_view> enclosing_loop(std::string_view id) noexcept;

/// True when `id` is an iteration instance itself: it ends in `[digits]`.
bool is_iteration(std::string_view id) noexcept;

/// `id` with the iteration indices dropped (`fan[3]/x` -> `fan[]/x`): the same step in every
/// iteration has the same key.
std::string without_indices(std::string_view id);

/// Progress of one running loop instance.
struct loop_progress {
  std::string id;
  std::optional<std::size_t> items;  ///< foreach: the number of items; while: unknown
  std::size_t done = 0;              ///< iterations that ended, whatever their status
  std::size_t failed = 0;            ///< of which failed
  std::size_t cancelled = 0;         ///< of which stopped (an interrupt, a budget, a sibling's fatal failure)
  std::size_t cached = 0;            ///< of which reused from the cache (`cache:`)
  std::size_t retries = 0;           ///< retries of instances inside its iterations
  std::set<std::string, std::less<>> running;     ///< iteration ids started and not ended (<= concurrency)
  std::uint64_t order = 0;           ///< start order, for a stable status line

  bool nested() const noexcept { return inside_iteration(id); }
};

/// The loops of a run that are currently running. Never throws except std::bad_alloc.
class loop_tracker {
public:
  /// A loop instance starts (step_start of a loop step). Restarting resets its counts.
  loop_progress& start_loop(std::string_view id, std::optional<std::size_t> items);
  /// The loop instance ended: its final progress, which the tracker forgets.
  std::optional<loop_progress> end_loop(std::string_view id);
  /// Iteration `id` (`L[i]`) starts; registers `L` (items unknown) when its start was not seen.
  loop_progress* start_iteration(std::string_view id);
  /// Iteration `id` ended as `status`; null when its loop is unknown. Failed and cancelled are
  /// counted apart, as the result counts them (docs/reference/formats.md, statuses).
  loop_progress* end_iteration(std::string_view id, step_status status, bool cached = false);
  /// An instance inside an iteration is retried; null when its loop is unknown.
  loop_progress* retry(std::string_view id);

  /// What following one event changed.
  struct followed {
    const loop_progress* iteration_of = nullptr;  ///< an iteration ended: its loop, as it is now
    bool loop_ended = false;                      ///< a loop instance ended
  };
  /// Follows a run's event (step_start, step_retry, step_end with a result; others are passed
  /// over) as the start_/end_/retry calls above: progress and `sessions show` count alike.
  followed follow(const event& e);

  /// The running loops, in the order they started.
  std::vector<const loop_progress*> in_start_order() const;

  bool empty() const noexcept { return loops_.empty(); }
  bool running(std::string_view id) const { return loops_.find(id) != loops_.end(); }
  void clear() noexcept { loops_.clear(); }

private:
  loop_progress* find(std::string_view id);

  std::map<std::string, loop_progress, std::less<>> loops_;
  std::uint64_t next_order_ = 0;
};

}  // namespace arun::io::detail
