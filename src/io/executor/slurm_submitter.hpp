#pragma once
// Submitting jobs, as few sbatch calls as the cluster allows:
// - A foreach whose body is one leaf comes whole (its leaves carry a fan_out_share): its
//   items are collected and go as job arrays of up to MaxArraySize tasks, whose task limits
//   (`%N`) share the loop's throttle (fan_out_budget.hpp). 10,000 items at -j 500 on a
//   default cluster are ten sbatch calls, and Slurm, not arun, starts each next task.
// - Other instances that ask within a few milliseconds of each other with the same sbatch
//   options go as the tasks of one array job too.
// Each task keeps its own job directory, output, exit file and record; only sbatch is shared.

#include "executor/fan_out_budget.hpp"
#include "executor/slurm_executor.hpp"
#include "executor/slurm_lookups.hpp"
#include "executor/slurm_script.hpp"

#include <arun/step_runner.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace arun::io {

struct slurm_submission {
  slurm_job_files files;
  std::string key;                   ///< the instance: a job of its own carries it as its comment
  std::vector<std::string> options;  ///< sbatch_resource_options: equal options may share an array
  std::shared_ptr<const fan_out_share> fan_out;  ///< set: a leaf of a foreach taken whole
};

struct slurm_submitted {
  std::string id;     ///< "123", or "123_4" for a task of an array; empty on failure
  std::string error;  ///< why sbatch gave no job
  bool cancelled = false;  ///< the caller cancelled it before it was submitted (error says so)
  /// The fan-out and part it went in (fan_out 0: none): its end goes to job_ended, whatever
  /// became of it, so that its unit of the throttle goes on.
  std::uint64_t fan_out = 0;
  std::size_t part = 0;
};

class slurm_submitter {
public:
  slurm_submitter(const slurm_options& options, slurm_array_limit& arrays);

  /// Submits `s` with whatever else is asked with it; also writes the instance's job record
  /// (submitting as an array task, then the id). Waits on `wake`, which the caller cancels
  /// after setting `cancel_requested`: a submission still waiting for its sbatch (its window,
  /// its fan-out's units) is then withdrawn and comes back `cancelled`; one whose sbatch is
  /// running comes back with its job, which the caller cancels.
  boost::asio::awaitable<slurm_submitted> submit(slurm_submission s, boost::asio::steady_timer& wake,
                                                 const bool& cancel_requested);
  /// A job that submit() gave a fan-out part ended (or its submission failed).
  void job_ended(std::uint64_t fan_out, std::size_t part);

  /// A job of fan-out `share` that an earlier arun submitted is taken up (after a crash).
  /// Called before the job's follower awaits anything: until every such job is adopted(), the
  /// fan-out's units wait, so that its new items never take the units the earlier jobs use.
  void adopting(const fan_out_share& share, boost::asio::any_io_executor ex);
  /// Job `id` ("123_4": a task of array 123) of that fan-out: `queued` (in the queue), and
  /// `running` (not pending). Once the last is in, the earlier arun's arrays become parts of
  /// the fan-out's throttle (fan_out_budget::add_adopted), their task limits set to their units
  /// (`scontrol update ArrayTaskThrottle`), and the new items get what is left. True: the
  /// job holds units, and adopted_ended() is to be called when it ends.
  bool adopted(std::uint64_t fan_out, const std::string& id, bool queued, bool running);
  void adopted_ended(std::uint64_t fan_out, const std::string& id);

  std::uint64_t sbatch_calls() const noexcept { return sbatch_calls_; }
  /// In the names of this process's array files (slurm_array_files::name: TAG-N).
  const std::string& process_tag() const noexcept { return process_tag_; }
  std::uint64_t arrays() const noexcept { return arrays_; }
  std::uint64_t limit_updates() const noexcept { return limit_updates_; }

  /// How long a submission waits for others to share its sbatch.
  static constexpr std::chrono::milliseconds window{20};
  /// How long a fan-out's collection waits for more of the items started at once before the
  /// ones it has go (items a condition skipped, or that failed before submitting, never
  /// come); items started later wait `window`.
  static constexpr std::chrono::milliseconds fan_out_quiet{100};

private:
  struct waiting {
    slurm_submission s;
    slurm_submitted result;
    boost::asio::steady_timer* wake = nullptr;
  };
  struct fan_out_part {
    std::vector<waiting*> tasks;  ///< until submitted
    std::vector<std::string> options;
    std::string array_id;  ///< once submitted as an array
    int limit_set = 0;     ///< the array's task limit Slurm has; an earlier arun's: unknown (-1) until set
  };
  /// The jobs of one of an earlier arun's arrays (or one job of its own), counted as they
  /// are adopted.
  struct adopted_jobs {
    std::size_t jobs = 0, running = 0;
    bool array = false;
  };
  static constexpr int limit_unknown = -1, limit_out_of_reach = std::numeric_limits<int>::max();
  struct fan_out_state {
    explicit fan_out_state(const fan_out_share& s) : share(s), budget(s.throttle) {}
    fan_out_share share;
    fan_out_budget budget;
    std::size_t arrived = 0;
    std::map<std::vector<std::string>, std::vector<waiting*>> collecting;  ///< by sbatch options
    std::vector<fan_out_part> parts;
    std::chrono::steady_clock::time_point last_arrival;
    int busy = 0;  ///< its coroutines still running (it stays while any does)
    bool quiet_wait = false, limits_pending = false;
    int adoptions_pending = 0;  ///< adopting() without adopted(): no unit is shared out meanwhile
    std::map<std::string, adopted_jobs> adopting;  ///< by array id, until none is pending
    std::map<std::string, std::size_t> adopted_parts;  ///< array id (a job's own id) → part
  };

  boost::asio::awaitable<void> flush_after_window(std::size_t max_tasks);
  /// A job of its own; its result and wake are set.
  boost::asio::awaitable<void> submit_alone(waiting* w);
  /// One array job of `tasks` (at most `limit` running, 0: no limit); its tasks' results
  /// and wakes are set. Returns the array's id, "" when it was not submitted as one. When
  /// sbatch refuses arrays, the tasks go one by one, or, given `refused`, are handed back
  /// there unsubmitted.
  boost::asio::awaitable<std::string> submit_array(std::vector<waiting*> tasks, int limit,
                                                   std::vector<waiting*>* refused = nullptr);

  void collect(waiting& w, std::size_t max_tasks);
  /// Takes `w` back while no sbatch carries it yet; false once one does.
  bool withdraw(waiting& w);
  /// The items collected with `options` become the fan-out's next part.
  void cut(std::uint64_t id, fan_out_state& f, const std::vector<std::string>& options);
  boost::asio::awaitable<void> cut_when_quiet(std::uint64_t id);
  /// Submits the parts that got their first units, and has the task limits raised.
  void share_out(std::uint64_t id);
  boost::asio::awaitable<void> submit_part(std::uint64_t id, std::size_t part, int limit);
  boost::asio::awaitable<void> raise_limits_after_window(std::uint64_t id);
  void forget_if_done(std::uint64_t id);
  /// The earlier arun's jobs adopted so far become parts; their task limits are set.
  void take_in_adopted(std::uint64_t id);
  void set_limits_soon(std::uint64_t id);

  const slurm_options& options_;
  slurm_array_limit& array_limit_;
  boost::asio::any_io_executor ex_;  ///< the run's, from the first submission
  std::map<std::vector<std::string>, std::vector<waiting*>> batches_;  ///< by sbatch options
  bool flush_pending_ = false;
  std::map<std::uint64_t, fan_out_state> fan_outs_;
  std::string process_tag_;  ///< in the names of this process's arrays
  std::size_t arrays_made_ = 0;
  std::uint64_t sbatch_calls_ = 0;
  std::uint64_t arrays_ = 0;
  std::uint64_t limit_updates_ = 0;
  bool arrays_refused_ = false;  ///< sbatch refused an array: every job goes on its own
};

/// Writes the instance's job record atomically; false with errno set when it cannot.
bool write_slurm_job_record(const slurm_job_files& files, std::string_view text);

}  // namespace arun::io
