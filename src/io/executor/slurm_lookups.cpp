#include "executor/slurm_lookups.hpp"

#include "executor/slurm_clients.hpp"
#include "output/arun_log.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>

namespace arun::io {
namespace asio = boost::asio;

namespace {

// The first line of `text` (without its line end), which is advanced past it.
std::string_view take_line(std::string_view& text) {
  const auto end = text.find('\n');
  auto line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Outside coroutines: g++ 12 cannot keep a braced list of strings in a coroutine frame.
std::vector<std::string> show_licenses() { return {"scontrol", "show", "licenses", "--oneliner"}; }
std::vector<std::string> show_config() { return {"scontrol", "show", "config"}; }
std::vector<std::string> jobs_with_comments(const std::string& session_id) {
  return {"squeue", "--all", "--array", "--noheader", "--name=arun-" + session_id, "--format=%i %T %k"};
}

}  // namespace

asio::awaitable<const process_result*> client_answer::get() {
  const auto ex = co_await asio::this_coro::executor;  // g++ 12: not inside another call's arguments
  if (state_ == state::asking) {
    asio::steady_timer answered(ex, asio::steady_timer::time_point::max());
    waiting_.push_back(&answered);
    co_await answered.async_wait(asio::as_tuple(asio::use_awaitable));
    std::erase(waiting_, &answered);  // still listed when this job was cancelled meanwhile
  } else if (state_ == state::unknown) {
    state_ = state::asking;
    // However the question ends (an answer, a failure, the run cancelled), the jobs
    // waiting for it go on.
    struct wake_waiting {
      client_answer& answer;
      ~wake_waiting() {
        answer.state_ = state::known;
        for (auto* timer : answer.waiting_) timer->cancel();
        answer.waiting_.clear();
      }
    } wake{*this};
    result_ = co_await slurm_client(argv_, env_);
  }
  co_return &result_;
}

slurm_licenses::slurm_licenses(const std::vector<std::string>& client_env) : answer_(show_licenses(), client_env) {}

asio::awaitable<bool> slurm_licenses::defines(std::string name) {
  const auto* r = co_await answer_.get();
  if (!parsed_) {
    parsed_ = true;
    if (r->succeeded())
      names_ = parse_license_names(r->out.text);
    else
      arun_log().warn("scontrol show licenses failed ({}): agent jobs take no provider license", client_failure(*r));
  }
  co_return names_.contains(name);
}

slurm_earlier_jobs::slurm_earlier_jobs(const std::string& session_id, const std::vector<std::string>& client_env)
    : answer_(jobs_with_comments(session_id), client_env) {}

asio::awaitable<void> slurm_earlier_jobs::parse() {
  const auto* r = co_await answer_.get();
  if (parsed_) co_return;
  parsed_ = true;
  if (r->succeeded()) {
    listed_ = true;
    by_key_ = parse_jobs_by_comment(r->out.text);
    ids_ = parse_job_ids(r->out.text);
    states_ = parse_job_states(r->out.text);
  } else {
    arun_log().warn("squeue could not list the earlier run's jobs ({}): an instance whose submission was cut "
                    "short is submitted again",
                    client_failure(*r));
  }
}

asio::awaitable<std::string> slurm_earlier_jobs::find(std::string key) {
  co_await parse();
  const auto it = by_key_.find(key);
  co_return it == by_key_.end() ? std::string() : it->second;
}

asio::awaitable<bool> slurm_earlier_jobs::queued(std::string id) {
  co_await parse();
  co_return !listed_ || ids_.contains(id);
}

asio::awaitable<std::optional<std::string>> slurm_earlier_jobs::state(std::string id) {
  co_await parse();
  if (!listed_) co_return std::nullopt;
  const auto it = states_.find(id);
  co_return it == states_.end() ? std::string() : it->second;
}

std::map<std::string, std::string, std::less<>> parse_job_states(std::string_view text) {
  std::map<std::string, std::string, std::less<>> states;
  while (!text.empty()) {
    const auto line = take_line(text);
    const auto space = line.find(' ');
    if (space == 0 || space == std::string_view::npos) continue;
    auto state = line.substr(space + 1);
    state = state.substr(0, state.find(' '));
    if (!state.empty()) states.emplace(line.substr(0, space), state);
  }
  return states;
}

std::set<std::string, std::less<>> parse_job_ids(std::string_view text) {
  std::set<std::string, std::less<>> ids;
  while (!text.empty()) {
    const auto line = take_line(text);
    const auto id = line.substr(0, line.find(' '));
    if (!id.empty()) ids.emplace(id);
  }
  return ids;
}

slurm_array_limit::slurm_array_limit(const std::vector<std::string>& client_env) : answer_(show_config(), client_env) {}

asio::awaitable<std::size_t> slurm_array_limit::max_tasks() {
  const auto* r = co_await answer_.get();
  if (!parsed_) {
    parsed_ = true;
    const auto size = r->succeeded() ? parse_max_array_size(r->out.text) : std::nullopt;
    if (size)
      max_tasks_ = *size > 0 ? *size - 1 : 0;
    else
      arun_log().warn("scontrol show config gave no MaxArraySize ({}): job arrays of at most {} tasks",
                      r->succeeded() ? "not in its output" : client_failure(*r), max_tasks_);
  }
  co_return max_tasks_;
}

std::optional<std::size_t> parse_max_array_size(std::string_view text) {
  constexpr std::string_view key = "MaxArraySize";
  while (!text.empty()) {
    auto line = take_line(text);
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    const auto eq = line.find_first_not_of(' ');
    if (eq == std::string_view::npos || line[eq] != '=') continue;
    line.remove_prefix(eq + 1);
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(' ')));
    std::size_t value = 0;
    const auto [rest, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
    if (ec == std::errc() && rest != line.data()) return value;
  }
  return std::nullopt;
}

std::set<std::string, std::less<>> parse_license_names(std::string_view text) {
  std::set<std::string, std::less<>> names;
  constexpr std::string_view key = "LicenseName=";
  for (auto at = text.find(key); at != std::string_view::npos; at = text.find(key, at)) {
    at += key.size();
    const auto end = text.find_first_of(" \t\r\n", at);
    auto name = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (!name.empty()) names.emplace(name);
  }
  return names;
}

std::map<std::string, std::string, std::less<>> parse_jobs_by_comment(std::string_view text) {
  std::map<std::string, std::string, std::less<>> jobs;
  while (!text.empty()) {
    const auto line = take_line(text);
    const auto space = line.find(' ');
    if (space == 0 || space == std::string_view::npos) continue;
    const auto comment_at = line.find(' ', space + 1);  // after the state
    if (comment_at == std::string_view::npos) continue;
    // The newest job of an instance wins: ids grow (squeue lists by priority, not by id).
    const std::string id(line.substr(0, space));
    auto [it, added] = jobs.try_emplace(std::string(line.substr(comment_at + 1)), id);
    if (!added && (it->second.size() < id.size() || (it->second.size() == id.size() && it->second < id))) it->second = id;
  }
  return jobs;
}

}  // namespace arun::io
