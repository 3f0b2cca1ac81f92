#pragma once
// The slurm executor: every job is a Slurm batch job. A generated wrapper (slurm_script.hpp)
// runs the step on a node, in a directory below a shared directory, and writes its output
// and exit status to files there; arun follows all of a run's jobs with one `squeue` per
// poll (adaptive: often while jobs start and end, seldom while nothing changes), tails the
// output files into the step's lines, and takes the status from the exit file. A deadline or
// a cancel becomes `scancel --signal=TERM`, then `--signal=KILL` after the grace period.
// Jobs outlive arun: when a killed run is resumed, an instance whose job the earlier arun
// submitted and never saw recorded is taken up (followed if it still runs, its exit file
// read if it has finished), never submitted a second time.

#include "executor/executor.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace arun::io {

class slurm_queue;
struct slurm_run_memory;

struct slurm_options {
  std::string shared_dir;               ///< job directories go below it: a filesystem the nodes share
  std::string session_id;               ///< every job of the run is named arun-<session_id>
  /// The session's job directory, private and checked (prepare_slurm_job_dirs): each job's
  /// directory goes in it.
  std::string jobs_dir;
  std::vector<std::string> client_env;  ///< "K=V": the environment of sbatch, squeue and scancel
  std::chrono::milliseconds min_poll{250};   ///< squeue interval while jobs come and go
  std::chrono::milliseconds max_poll{2000};  ///< the interval it grows to while nothing changes
  /// A job that left the queue without an exit file is `lost` after this long (a shared
  /// filesystem may show the file late).
  std::chrono::milliseconds lost_after{30000};
  /// Whether the session's journal has a record of instance `key`: such an instance runs
  /// again as new work and never takes up a job an earlier arun left. Unset: none has.
  std::function<bool(std::string_view key)> recorded;
  /// A job waiting in the queue longer than this (held, or pending for any reason but its
  /// array's task limit) is cancelled and its step fails; unset: it waits as long as Slurm
  /// keeps it (--pending-timeout).
  std::optional<std::chrono::milliseconds> pending_timeout;
  /// A job pending this long is warned about once; a held one after held_warn_after.
  std::chrono::milliseconds pending_warn_after{std::chrono::minutes(10)};
  std::chrono::milliseconds held_warn_after{0};
  /// Says a warning about instance `key` (its job is held, or pending long): the run's
  /// warning events. Unset: arun's log only.
  std::function<void(const std::string& key, const std::string& message)> warn;
  /// Set (a run with a journal): a collected job's directory is removed only once the journal
  /// has its result (release), through this, which runs the removal after the journal's
  /// queued writes. Unset: removed as soon as the result is collected.
  std::function<void(std::function<void()>)> after_journal;
};

class slurm_executor final : public executor {
public:
  explicit slurm_executor(slurm_options options);
  ~slurm_executor() override;
  slurm_executor(const slurm_executor&) = delete;
  slurm_executor& operator=(const slurm_executor&) = delete;

  std::string_view name() const noexcept override { return "slurm"; }
  executor_caps caps() const noexcept override {
    return {.jobs_outlive_arun = true, .resources = true, .fan_outs = true};
  }
  boost::asio::awaitable<process_result> run(job_spec job) override;
  /// Cancels every job of the run at once (`scancel --name`), waiting a few seconds at most.
  void emergency_stop() noexcept override;

  const std::string& shared_dir() const noexcept { return options_.shared_dir; }

  /// The journal has the result of `instance` (and of everything inside it): the job
  /// directories of those arun collected are removed (through options.after_journal).
  void release(std::string_view instance) noexcept;
  /// The run has ended: every job directory collected and not yet removed is removed, and
  /// the array files of this arun process.
  void release_all() noexcept;
  /// The jobs waiting in the queue worth a mention (held, requeued, pending long): instance
  /// and note ("pending (JobHeldAdmin)"), for the status line.
  std::vector<std::pair<std::string, std::string>> waiting() const;

  /// What the executor did so far, for arun's log and the benchmark.
  struct statistics {
    std::uint64_t submitted = 0;    ///< jobs submitted (an array's tasks each count)
    std::uint64_t taken_up = 0;     ///< jobs of an earlier arun followed instead of submitted
    std::uint64_t sbatch_calls = 0; ///< submissions: a job of its own or an array of them
    std::uint64_t arrays = 0;       ///< of which array jobs
    std::uint64_t limit_updates = 0; ///< raised task limits of a fan-out's arrays (scontrol update)
    std::uint64_t queue_polls = 0;  ///< squeue calls (one covers every job of the run)
  };
  statistics stats() const noexcept;

private:
  slurm_options options_;
  std::shared_ptr<slurm_queue> queue_;  ///< made on the first job's executor
  std::shared_ptr<slurm_run_memory> memory_;
};

}  // namespace arun::io
