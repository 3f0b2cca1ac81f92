#pragma once
// What the slurm executor hands sbatch for one job: the job's directory (on a filesystem the
// nodes share), the wrapper script that runs the step there, and sbatch's options. Pure
// functions of the job, so they are tested without a cluster.

#include "executor/executor.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// The files of one job, all in one directory below the shared directory.
struct slurm_job_files {
  std::string dir;
  std::string script() const { return dir + "/run.sh"; }
  std::string argv() const { return dir + "/argv"; }      ///< the command, NUL-separated
  std::string env() const { return dir + "/env"; }        ///< the environment, NUL-separated
  std::string out() const { return dir + "/out"; }        ///< the step's stdout
  std::string err() const { return dir + "/err"; }        ///< the step's stderr
  std::string status() const { return dir + "/exit"; }    ///< "exit N" or "error TEXT", written last
  std::string input() const { return dir + "/stdin"; }    ///< the step's stdin, when it has one
  std::string slurm_log() const { return dir + "/slurm.log"; }  ///< what Slurm itself says about the job
  /// The instance's journal of submissions: `submitting` before sbatch runs, then the job's
  /// id, each written atomically. A resumed run reads it to take up the job instead of
  /// submitting the instance again.
  std::string job() const { return dir + "/job"; }
};

/// The job directory of `key` in the session's job directory `jobs_dir` (a private one arun
/// made, slurm_job_dirs.hpp): readable (the key made file-safe) and unique (a hash of the key
/// tells `a/b` from `a_b`), the same on every resume.
slurm_job_files slurm_job_files_for(const std::string& jobs_dir, std::string_view key);

/// Written by a second Ctrl-C after it cancelled every job of the session: a resume runs
/// anew the jobs that were in flight then, instead of waiting for them to be reported lost.
std::string slurm_emergency_stop_marker(const std::string& jobs_dir);

/// The wrapper sbatch runs: enters `working_dir`, runs the command of `argv` in the
/// foreground with exactly the environment of `env` (plus the job's SLURM_* variables), its
/// stdout and stderr to `out` and `err`, and writes `job ID` and then `exit N` (N from 129 to
/// 192: killed by signal N - 128) to `exit` atomically once the command has ended; `error
/// TEXT` instead of `exit N` when it could not start it; then `times START END`, the
/// wrapper's start and end ($EPOCHREALTIME, empty before bash 5). `with_input`: the command reads
/// `input` (an agent's prompt), else /dev/null.
std::string slurm_wrapper_script(const slurm_job_files& files, const std::string& working_dir, bool with_input);

/// sbatch's arguments for one job (the script path last): --parsable, the job name and
/// comment that tie the job to the session and instance, Slurm's own output to the job's
/// slurm.log, and the resource options (sbatch_resource_options).
std::vector<std::string> sbatch_arguments(const slurm_job_files& files, const std::vector<std::string>& resource_options,
                                          std::string_view job_name, std::string_view comment);

/// sbatch's options for what a job asks (--ntasks, the resources: cpus, mem, partition, gpus,
/// licenses, extra options; --time from resources.time, else `time_limit`, Slurm's backstop
/// behind arun's own deadline): jobs with the same options can be tasks of one array job.
std::vector<std::string> sbatch_resource_options(const job_resources& resources,
                                                 std::optional<std::chrono::seconds> time_limit);

/// The files of one array job: several instances submitted at once (the first jobs of a
/// fan-out, the ones started as a poll frees their slots), each still with its own job
/// directory. They live in JOBS/arrays (JOBS: the session's job directory).
struct slurm_array_files {
  std::string dir;
  /// TAG-N: the arun process's own tag (a resumed run's arrays never take a killed run's
  /// names), then the number of the array in that process.
  std::string name;
  std::string list() const { return dir + "/" + name + ".list"; }  ///< task I: line I+1, a job directory
  std::string script() const { return dir + "/" + name + ".sh"; }
  std::string slurm_log() const { return dir + "/" + name + ".%a.log"; }  ///< Slurm's own, per task
  /// The array job's comment: what a resume looks for when a submission was cut short.
  std::string comment() const { return "arun-array-" + name; }
};
slurm_array_files slurm_array_files_for(const std::string& jobs_dir, std::string_view process_tag, std::size_t number);

/// The array job's script: task I runs the wrapper of the job directory on line I+1 of the list.
std::string slurm_array_script(const slurm_array_files& array);

/// sbatch's arguments for an array of `tasks` tasks with the given resource options; at most
/// `task_limit` of them run at once (`%N`), 0: no limit.
std::vector<std::string> sbatch_array_arguments(const slurm_array_files& array, std::size_t tasks,
                                                const std::vector<std::string>& resource_options,
                                                std::string_view job_name, int task_limit = 0);

/// `resources` with one license of `provider` added, when the step does not name that license
/// itself; null `resources` counts as none asked.
job_resources with_provider_license(const job_resources* resources, const std::string& provider);

/// `sbatch --time` text for a duration: minutes rounded up, as D-HH:MM:SS.
std::string slurm_time(std::chrono::seconds limit);

/// Why a job that Slurm keeps pending for `reason` (squeue's %r) will never start as it is
/// (a time limit above the partition's, a limit per job, an invalid account...), for the
/// step's error; empty when the reason passes (waiting for resources, licenses, priority).
std::string slurm_never_starts(std::string_view reason);

/// What squeue's state (%T) and reason (%r) say of a job that waits instead of running
/// (docs/scale-out.md, "Held and pending jobs").
struct slurm_wait {
  bool waiting = false;   ///< in the queue, not running: PENDING, REQUEUED, REQUEUE_HOLD...
  bool held = false;      ///< held: Slurm will not start it until someone releases it
  bool throttled = false; ///< waiting for its array's task limit: arun's own limit, not Slurm's
  std::string note;       ///< for the status line: "pending (JobHeldAdmin)", "pending (Resources)"
};
slurm_wait slurm_waiting(std::string_view state, std::string_view reason);

/// A job's id as squeue lists it: "123", or "123_4" for task 4 of array job 123.
bool is_slurm_job_id(std::string_view text);

/// What an instance's `job` record says (slurm_job_files::job).
struct slurm_job_record {
  std::string id;             ///< the job's id once sbatch answered; empty while submitting
  bool done = false;          ///< the job's result reached arun ("done ID")
  bool cancelling = false;    ///< arun was cancelling the job (Ctrl-C, a failed sibling): "cancelling ID"
  std::string array_comment;  ///< submitting as a task of this array job (its comment)
  std::size_t task = 0;       ///< ... with this index
};
/// "ID", "cancelling ID", "done ID", "submitting" or "submitting ARRAY-COMMENT TASK"; nullopt for
/// anything else.
std::optional<slurm_job_record> parse_slurm_job_record(std::string_view text);

/// What the wrapper's `exit` file says.
struct slurm_exit_status {
  std::string job_id;  ///< the job that wrote it
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string error;  ///< the wrapper could not start the command
  /// How long the job ran, from the wrapper's start to its end by the node's clock; unset
  /// when the wrapper could not tell (bash before 5).
  std::optional<std::chrono::nanoseconds> ran;
};
/// Parses the `exit` file; nullopt when the text is not one the wrapper writes.
std::optional<slurm_exit_status> parse_slurm_exit(std::string_view text);

}  // namespace arun::io
