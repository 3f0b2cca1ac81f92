#pragma once
// A job waiting in Slurm's queue instead of running (docs/scale-out.md, "Held and pending
// jobs"): held after a controller restart (`launch failed requeued held`), by an administrator
// (`JobHeldAdmin`) or its user, or pending for resources or priority. The watch notes it for
// the status line, warns once after a while, and ends the wait at --pending-timeout.

#include "executor/slurm_executor.hpp"
#include "executor/slurm_script.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace arun::io {

class pending_watch {
public:
  using clock = std::chrono::steady_clock;
  /// `options` and `key` (the instance) must outlive the watch.
  pending_watch(const slurm_options& options, const std::string& key) : options_(options), key_(key) {}

  /// One look at job `id` in the queue (`wait`: what squeue said; `ran_before`: arun saw it
  /// running before, so it was requeued). Keeps `notes[key]` (the status line's) up to date,
  /// warns once; returns why the job is to be cancelled (pending past --pending-timeout), or
  /// empty.
  std::string look(const slurm_wait& wait, const std::string& id, bool ran_before, clock::time_point now,
                   std::map<std::string, std::string, std::less<>>& notes);

private:
  const slurm_options& options_;
  const std::string& key_;
  std::optional<clock::time_point> since_;  ///< waiting since (the last time it ran, or was submitted)
  bool warned_ = false;
};

/// How much of a job's `total` time (from arun's submission to its result) it spent waiting
/// in the queue (docs/scale-out.md, queue time): the total less the run time the wrapper
/// measured (`ran`), else up to when arun saw it running (`seen_running_after`), else all of it
/// when it never ran (`ran_at_all` false: cancelled or refused while pending); unknown (a
/// wrapper of bash 4 whose short job no poll saw running) otherwise.
std::optional<std::chrono::nanoseconds> slurm_queue_time(std::chrono::nanoseconds total,
                                                         std::optional<std::chrono::nanoseconds> ran,
                                                         std::optional<std::chrono::nanoseconds> seen_running_after,
                                                         bool ran_at_all);

/// "5 s", "3 min", "2 h 5 min": a wait for messages.
std::string waited_text(std::chrono::steady_clock::duration d);

}  // namespace arun::io
