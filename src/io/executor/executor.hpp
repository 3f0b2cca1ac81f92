#pragma once
// The executor seam: where a leaf step's process runs. The step runner turns a bash or agent
// step into a job (program, environment, working directory, deadline, output limits) and an
// executor runs it to its end; the engine never learns which one did. `local` runs the job as
// a child of arun under the supervisor (process/supervisor.hpp). An executor whose jobs live
// elsewhere (a cluster's scheduler) submits, follows and collects them, and can follow a job
// again after arun itself was restarted (`adopt`).

#include "process/supervisor.hpp"

#include <arun/recipe.hpp>
#include <arun/step_runner.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// What a job asks of the machine that runs it (a step's `resources:`). A cluster
/// scheduler honours these; the local executor runs on the machine it has.
using job_resources = step_resources;

/// Where a submitted job can be found again: recorded in the session before arun waits for
/// it, so that a resumed run follows the job instead of submitting it a second time.
struct job_handle {
  std::string executor;  ///< the executor's name
  std::string id;        ///< the executor's own id for the job (a Slurm job id)

  bool operator==(const job_handle&) const = default;
};

struct job_spec {
  process_spec process;  ///< what to run and how to supervise it
  std::shared_ptr<const job_resources> resources;  ///< null: nothing asked
  std::string key;       ///< unique in the run and stable across resumes: session and instance
  /// An agent step's provider (claude, codex, ...): a cluster that defines a license of that
  /// name caps the provider's agents with it. Empty for bash steps.
  std::string provider;
  /// Set: a leaf of a foreach handed over whole (caps().fan_outs); its leaves ask together
  /// and at most its throttle run at once.
  std::shared_ptr<const fan_out_share> fan_out;
  /// Set on resume: the job submitted before arun stopped; follow it instead of submitting.
  std::optional<job_handle> adopt;
  /// Called once the job has an id, before the executor waits for it.
  std::function<void(const job_handle&)> submitted;
  /// Called once when a job that waited in a queue is seen running (may be empty).
  std::function<void()> running;
};

/// What an executor can do, for the step runner and `validate`.
struct executor_caps {
  bool jobs_outlive_arun = false;  ///< running jobs survive a crash of arun and can be adopted
  bool resources = false;          ///< honours job_resources
  /// Takes a whole fan-out at once and runs at most its throttle of it (job arrays with a
  /// task limit): the engine hands such loops over instead of starting one job per slot.
  bool fan_outs = false;
};

class executor {
public:
  virtual ~executor() = default;

  virtual std::string_view name() const noexcept = 0;
  virtual executor_caps caps() const noexcept = 0;

  /// Runs `job` to its end and returns what the supervisor would: exit status or signal,
  /// the captured output, timed out or cancelled, or why it never started. Never throws for
  /// the job's own failures. Cancelling the awaiting coroutine cancels the job (gracefully,
  /// then hard after process.kill_grace) and the result says `cancelled`.
  virtual boost::asio::awaitable<process_result> run(job_spec job) = 0;

  /// A second Ctrl-C: ends every job of the run now, from the signal's handler, without
  /// the event loop; arun exits right after.
  virtual void emergency_stop() noexcept = 0;
};

}  // namespace arun::io
