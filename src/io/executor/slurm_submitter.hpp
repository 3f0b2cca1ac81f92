#pragma once
// Submitting jobs: the instances that ask within a few milliseconds of each other with the
// same sbatch options go as the tasks of one array job. A fan-out starts as many instances
// as --max-concurrent allows at once, and each squeue poll frees the slots of all the jobs
// it saw end together: so a 10,000-item foreach is a few hundred submissions, not 10,000,
// and Slurm's controller is spared the storm. Each task keeps its own job directory, output,
// exit file and record; only sbatch is shared.

#include "executor/slurm_executor.hpp"
#include "executor/slurm_script.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace arun::io {

struct slurm_submission {
  slurm_job_files files;
  std::string key;                   ///< the instance: a job of its own carries it as its comment
  std::vector<std::string> options;  ///< sbatch_resource_options: equal options may share an array
};

struct slurm_submitted {
  std::string id;     ///< "123", or "123_4" for a task of an array; empty on failure
  std::string error;  ///< why sbatch gave no job
};

class slurm_submitter {
public:
  explicit slurm_submitter(const slurm_options& options);

  /// Submits `s` with whatever else is asked within the batching window; also writes the
  /// instance's job record (submitting as an array task, then the id).
  boost::asio::awaitable<slurm_submitted> submit(slurm_submission s);

  std::uint64_t sbatch_calls() const noexcept { return sbatch_calls_; }
  std::uint64_t arrays() const noexcept { return arrays_; }

  /// The largest array submitted (Slurm's default MaxArraySize is 1001).
  static constexpr std::size_t max_array_tasks = 1000;
  /// How long a submission waits for others to share its sbatch.
  static constexpr std::chrono::milliseconds window{20};

private:
  struct waiting {
    slurm_submission s;
    slurm_submitted result;
    boost::asio::steady_timer* wake = nullptr;
  };
  boost::asio::awaitable<void> flush_after_window();
  boost::asio::awaitable<void> submit_alone(waiting* w);
  boost::asio::awaitable<void> submit_array(std::vector<waiting*> tasks);

  const slurm_options& options_;
  std::map<std::vector<std::string>, std::vector<waiting*>> batches_;  ///< by sbatch options
  bool flush_pending_ = false;
  std::string process_tag_;  ///< in the names of this process's arrays
  std::size_t arrays_made_ = 0;
  std::uint64_t sbatch_calls_ = 0;
  std::uint64_t arrays_ = 0;
};

/// Writes the instance's job record atomically; false with errno set when it cannot.
bool write_slurm_job_record(const slurm_job_files& files, std::string_view text);

}  // namespace arun::io
