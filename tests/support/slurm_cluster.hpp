#pragma once
// A private single-node Slurm cluster for tests: its own temp dir, ports and slurm.conf,
// slurmctld and slurmd started as children of the test process in the constructor, and
// everything it ran (jobs, their orphans, slurmstepd, the daemons) gone after the destructor.
// /work/shared/SLURM.md has the measurements and pitfalls this is built on.
//
//   if (auto why = slurm_cluster::unavailable_reason(); !why.empty()) { WARN(why); return; }
//   slurm_cluster cluster;                     // ~0.1 s until the node is idle
//   auto r = cluster.run_client({"sbatch", "--parsable", script});
//
// Clients see the cluster only through SLURM_CONF: pass env() to every Slurm command a test
// (or the code under test) runs; the test process's own environment is left alone.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace arun::test {

class slurm_cluster {
 public:
  struct options {
    int cpus = 2;                                ///< CPUs of the one node (OverSubscribe=FORCE:32 on top)
    std::map<std::string, int> licenses;         ///< cluster licenses: {{"claude", 2}} → Licenses=claude:2
    std::vector<std::string> extra_conf;         ///< lines appended to slurm.conf (later lines win)
    int kill_wait_seconds = 5;                   ///< KillWait: SIGTERM → SIGKILL on scancel
    int min_job_age_seconds = 10;                ///< MinJobAge: `scontrol show job` keeps a finished job at
                                                 ///< least this long (purged some seconds later)
    std::chrono::milliseconds start_timeout{15000};  ///< until the node reports idle
  };

  struct client_result {
    int exit_code = -1;  ///< exit status; 128+N when killed by signal N; -1 when it could not start
    std::string out;
    std::string err;
    bool timed_out = false;  ///< killed by run_client's timeout
  };

  /// Empty when the cluster can run here (slurmctld, slurmd, sbatch, squeue, scancel and
  /// sinfo on PATH, running as root); otherwise what is missing, for a test to WARN and skip.
  static std::string unavailable_reason();

  /// Starts the cluster and waits until its node is idle; throws std::runtime_error (with
  /// the tail of both daemons' logs) when it does not come up.
  explicit slurm_cluster(options opts);
  slurm_cluster() : slurm_cluster(options{}) {}
  /// Cancels every job, stops both daemons and kills whatever of the cluster is left, then
  /// removes dir(). ~0.1 s; bounded (about 5 s when a job ignores SIGTERM); never throws.
  ~slurm_cluster();
  slurm_cluster(const slurm_cluster&) = delete;
  slurm_cluster& operator=(const slurm_cluster&) = delete;

  const std::filesystem::path& dir() const { return dir_; }  ///< removed by the destructor
  std::string conf_path() const;
  /// What to add to a child's environment so that Slurm clients talk to this cluster.
  std::vector<std::string> env() const;
  const std::string& node_name() const { return node_; }
  int controller_port() const { return ctld_port_; }
  int node_port() const { return slurmd_port_; }

  /// Runs a Slurm client (argv[0] looked up on PATH) against this cluster; stdin is
  /// /dev/null. Killed with SIGKILL after `timeout`.
  client_result run_client(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  /// Ids of the jobs squeue lists (pending, running, completing...; finished jobs leave at
  /// once), each task of an array job on its own ("12_3"). Throws std::runtime_error when squeue fails.
  std::vector<std::string> queue() const;
  /// Polls queue() until it is empty; false on timeout (or when squeue keeps failing).
  bool wait_queue_empty(std::chrono::milliseconds timeout) const;
  /// scancel for every job in the queue (a plain cancel: SIGTERM, SIGKILL after KillWait).
  void cancel_all() const;

  /// The last `lines` lines of the daemons' logs and captured stdout/stderr, for messages.
  std::string log_tail(std::size_t lines = 15) const;

 private:
  std::string render_conf() const;
  bool start_once(std::string& failure);
  void stop_daemons(std::chrono::milliseconds patience) noexcept;
  void reap_loop(std::stop_token stop);
  void track_and_reap();
  void kill_leftovers(std::chrono::milliseconds patience) noexcept;
  std::vector<std::string> client_environment() const;

  options opts_;
  std::filesystem::path dir_;
  std::string node_;
  int ctld_port_ = 0;
  int slurmd_port_ = 0;
  pid_t ctld_pid_ = -1;    ///< -1 once reaped
  pid_t slurmd_pid_ = -1;  ///< -1 once reaped
  /// Session ids of this cluster's processes: each slurmstepd starts a session that its job's
  /// processes share (and the daemons lead their own). Orphans re-parented to the test
  /// process are recognised by it. Used by the reaper thread, then by the destructor.
  std::set<pid_t> sessions_;
  /// Reaps this cluster's zombie orphans while the cluster runs (see slurm_cluster.cpp).
  std::jthread reaper_;
};

}  // namespace arun::test
