#pragma once
// What the slurm executor asks the cluster once per run, when the first job needs to know;
// jobs starting meanwhile wait for that one answer:
// - the licenses the cluster defines (`Licenses=claude:20` in slurm.conf): an agent job takes
//   one of its provider's, so the cluster caps each provider's agents across every run;
// - the jobs an earlier arun of the same session left in the queue, by instance (resume
//   after a crash takes them up instead of submitting their instances again);
// - the largest job array the cluster accepts (MaxArraySize): a larger fan-out is cut into
//   arrays of that size instead of being refused.

#include "process/supervisor.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// One client command's result, asked for at most once.
class client_answer {
public:
  /// `env` must outlive this object.
  client_answer(std::vector<std::string> argv, const std::vector<std::string>& env) : argv_(std::move(argv)), env_(env) {}

  /// The command's result: run by the first caller; later ones wait for it or have it at once.
  boost::asio::awaitable<const process_result*> get();

private:
  enum class state { unknown, asking, known };
  std::vector<std::string> argv_;
  const std::vector<std::string>& env_;
  state state_ = state::unknown;
  process_result result_;
  std::vector<boost::asio::steady_timer*> waiting_;  ///< cancelled when the answer is in
};

class slurm_licenses {
public:
  explicit slurm_licenses(const std::vector<std::string>& client_env);
  /// Whether the cluster defines license `name`; false when scontrol cannot tell (logged once).
  boost::asio::awaitable<bool> defines(std::string name);

private:
  client_answer answer_;
  bool parsed_ = false;
  std::set<std::string, std::less<>> names_;
};

class slurm_earlier_jobs {
public:
  slurm_earlier_jobs(const std::string& session_id, const std::vector<std::string>& client_env);
  /// The id of the job in the queue whose comment is `key` (the instance), or "".
  boost::asio::awaitable<std::string> find(std::string key);
  /// Whether job `id` ("123", "123_4") is in the queue; true when squeue could not tell.
  boost::asio::awaitable<bool> queued(std::string id);
  /// Job `id`'s state in that listing ("PENDING", "RUNNING"...): empty when it is not in the
  /// queue, nothing when squeue could not tell.
  boost::asio::awaitable<std::optional<std::string>> state(std::string id);

private:
  boost::asio::awaitable<void> parse();
  client_answer answer_;
  bool parsed_ = false;
  bool listed_ = false;
  std::map<std::string, std::string, std::less<>> by_key_;
  std::set<std::string, std::less<>> ids_;
  std::map<std::string, std::string, std::less<>> states_;
};

class slurm_array_limit {
public:
  explicit slurm_array_limit(const std::vector<std::string>& client_env);
  /// The most tasks one array job may have: MaxArraySize - 1 (task ids run from 0 to
  /// MaxArraySize - 1); 0 when the cluster takes no arrays. Slurm's default (1000) when
  /// scontrol cannot tell (logged once).
  boost::asio::awaitable<std::size_t> max_tasks();

private:
  client_answer answer_;
  bool parsed_ = false;
  std::size_t max_tasks_ = 1000;
};

/// MaxArraySize in `scontrol show config` output ("MaxArraySize            = 1001").
std::optional<std::size_t> parse_max_array_size(std::string_view scontrol_output);

/// The license names in `scontrol show licenses` output ("LicenseName=claude Total=2 ...").
std::set<std::string, std::less<>> parse_license_names(std::string_view scontrol_output);

/// The job ids of `squeue --format='%i ...'` lines.
std::set<std::string, std::less<>> parse_job_ids(std::string_view squeue_output);

/// `squeue --format='%i %T'` lines (more fields may follow) as {job id: state}.
std::map<std::string, std::string, std::less<>> parse_job_states(std::string_view squeue_output);

/// `squeue --format='%i %T %k'` lines as {comment: job id} (the comment is the rest of the line).
std::map<std::string, std::string, std::less<>> parse_jobs_by_comment(std::string_view squeue_output);

}  // namespace arun::io
