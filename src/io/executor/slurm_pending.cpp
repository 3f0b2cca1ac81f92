#include "executor/slurm_pending.hpp"

#include "output/arun_log.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace arun::io {

std::string waited_text(std::chrono::steady_clock::duration d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 120) return fmt::format("{} s", s);
  if (s < 7200) return fmt::format("{} min", s / 60);
  return fmt::format("{} h {} min", s / 3600, (s / 60) % 60);
}

std::string pending_watch::look(const slurm_wait& wait, const std::string& id, bool ran_before, clock::time_point now,
                                std::map<std::string, std::string, std::less<>>& notes) {
  // Waiting for its array's task limit is waiting for arun's own -j: not Slurm's queue.
  if (!wait.waiting || wait.throttled) {
    since_.reset();
    warned_ = false;
    notes.erase(key_);
    return {};
  }
  if (!since_) since_ = now;
  const auto waited = now - *since_;
  // The status line names the jobs that need a look: held, requeued, or pending long.
  if (wait.held || ran_before || waited >= options_.pending_warn_after)
    notes.insert_or_assign(key_, wait.note);
  else
    notes.erase(key_);
  const auto warn_after = wait.held ? options_.held_warn_after : options_.pending_warn_after;
  if (!warned_ && waited >= warn_after) {
    warned_ = true;
    const auto limit = options_.pending_timeout
                           ? fmt::format("--pending-timeout fails it after {}", waited_text(*options_.pending_timeout))
                           : std::string("--pending-timeout DURATION would fail it");
    const auto message =
        wait.held ? fmt::format("Slurm job {} is {}{}: it will not start until it is released (scontrol release {}); {}",
                                id, wait.note, ran_before ? " after it ran (requeued)" : "", id, limit)
                  : fmt::format("Slurm job {} has been {} for {}{}; {}", id, wait.note, waited_text(waited),
                                ran_before ? " after it ran (requeued)" : "", limit);
    arun_log().warn("{}: {}", key_, message);
    if (options_.warn) options_.warn(key_, message);
  }
  if (options_.pending_timeout && waited >= *options_.pending_timeout)
    return fmt::format("Slurm job {} waited in the queue for {}, {}: cancelled at --pending-timeout {}", id,
                       waited_text(waited), wait.note, waited_text(*options_.pending_timeout));
  return {};
}

std::optional<std::chrono::nanoseconds> slurm_queue_time(std::chrono::nanoseconds total,
                                                         std::optional<std::chrono::nanoseconds> ran,
                                                         std::optional<std::chrono::nanoseconds> seen_running_after,
                                                         bool ran_at_all) {
  using std::chrono::nanoseconds;
  // The node's clock measures the run, arun's the whole: a run longer than the whole (clocks
  // that drift) leaves no queue time, never a negative one.
  if (ran) return std::max(nanoseconds::zero(), total - std::min(total, *ran));
  if (seen_running_after) return std::clamp(*seen_running_after, nanoseconds::zero(), total);
  if (!ran_at_all) return total;
  return std::nullopt;
}

}  // namespace arun::io
