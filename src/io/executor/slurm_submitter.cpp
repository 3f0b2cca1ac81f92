#include "executor/slurm_submitter.hpp"

#include "executor/slurm_clients.hpp"
#include "files/private_files.hpp"
#include "output/arun_log.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace arun::io {
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

bool write_slurm_job_record(const slurm_job_files& files, std::string_view text) {
  return replace_private_file(files.job(), std::string(text) + "\n");
}

namespace {

// What sbatch --parsable answered: "ID" or "ID;CLUSTER".
std::string parsed_job_id(const process_result& r) {
  return r.succeeded() ? r.out.text.substr(0, r.out.text.find_first_of(";\n")) : std::string();
}

// Outside coroutines: g++ 12 cannot keep a braced list of strings in a coroutine frame.
std::vector<std::string> array_task_limit(const std::string& array_id, int limit) {
  return {"scontrol", "update", "JobId=" + array_id, "ArrayTaskThrottle=" + std::to_string(limit)};
}

}  // namespace

slurm_submitter::slurm_submitter(const slurm_options& options, slurm_array_limit& arrays)
    : options_(options), array_limit_(arrays) {
  std::random_device random;
  process_tag_ = fmt::format("{:08x}", random());
}

asio::awaitable<slurm_submitted> slurm_submitter::submit(slurm_submission s, asio::steady_timer& wake,
                                                         const bool& cancel_requested) {
  const auto ex = co_await asio::this_coro::executor;
  ex_ = ex;
  const std::size_t max_tasks = co_await array_limit_.max_tasks();
  waiting me;
  me.s = std::move(s);
  me.wake = &wake;
  if (cancel_requested) {
    me.result.error = "cancelled before it was submitted";
    me.result.cancelled = true;
    co_return me.result;
  }
  if (me.s.fan_out) {
    collect(me, max_tasks);
  } else {
    batches_[me.s.options].push_back(&me);
    if (!flush_pending_) {
      flush_pending_ = true;
      asio::co_spawn(ex, flush_after_window(max_tasks), asio::detached);
    }
  }
  // Woken (the timer cancelled) once the submission that carries this one has its answer,
  // or the caller cancels.
  while (me.result.id.empty() && me.result.error.empty()) {
    co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
    if (cancel_requested && me.result.id.empty() && me.result.error.empty() && withdraw(me)) {
      me.result.error = "cancelled before it was submitted";
      me.result.cancelled = true;
    }
  }
  co_return me.result;
}

bool slurm_submitter::withdraw(waiting& w) {
  const auto take_out = [&w](std::vector<waiting*>& from) {
    const auto it = std::find(from.begin(), from.end(), &w);
    if (it == from.end()) return false;
    from.erase(it);
    return true;
  };
  if (!w.s.fan_out) {
    const auto batch = batches_.find(w.s.options);
    return batch != batches_.end() && take_out(batch->second);
  }
  const auto found = fan_outs_.find(w.s.fan_out->id);
  if (found == fan_outs_.end()) return false;
  auto& f = found->second;
  if (const auto group = f.collecting.find(w.s.options); group != f.collecting.end() && take_out(group->second)) {
    if (group->second.empty()) f.collecting.erase(group);
    return true;
  }
  // In a part still waiting for its units (or whose sbatch has not started): its unit is
  // never used.
  if (w.result.fan_out != found->first || !take_out(f.parts.at(w.result.part).tasks)) return false;
  f.budget.finished(w.result.part);
  w.result.fan_out = 0;
  share_out(found->first);
  forget_if_done(found->first);
  return true;
}

asio::awaitable<void> slurm_submitter::flush_after_window(std::size_t max_tasks) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer window_timer(ex, window);
  co_await window_timer.async_wait(asio::as_tuple(asio::use_awaitable));
  flush_pending_ = false;
  auto batches = std::move(batches_);
  batches_.clear();
  const std::size_t chunk_size = arrays_refused_ ? 1 : std::max<std::size_t>(1, max_tasks);
  for (auto& [options, group] : batches)
    for (std::size_t from = 0; from < group.size(); from += chunk_size) {
      const auto to = std::min(group.size(), from + chunk_size);
      std::vector<waiting*> chunk(group.begin() + static_cast<std::ptrdiff_t>(from),
                                  group.begin() + static_cast<std::ptrdiff_t>(to));
      // Each sbatch in a coroutine of its own: one slow submission does not hold the others.
      if (chunk.size() == 1) {
        auto alone = submit_alone(chunk.front());
        asio::co_spawn(ex, std::move(alone), asio::detached);
      } else {
        auto together = submit_array(std::move(chunk), 0);
        asio::co_spawn(ex, std::move(together), asio::detached);
      }
    }
}

asio::awaitable<void> slurm_submitter::submit_alone(waiting* w) {
  ++sbatch_calls_;
  auto args = sbatch_arguments(w->s.files, w->s.options, "arun-" + options_.session_id, w->s.key);
  const auto r = co_await slurm_client(std::move(args), options_.client_env);
  w->result.id = parsed_job_id(r);
  if (w->result.id.empty()) w->result.error = "sbatch could not submit the job: " + client_failure(r);
  w->wake->cancel();
}

asio::awaitable<std::string> slurm_submitter::submit_array(std::vector<waiting*> tasks, int limit,
                                                          std::vector<waiting*>* refused) {
  const auto array = slurm_array_files_for(options_.jobs_dir, process_tag_, ++arrays_made_);
  std::string list;
  for (const auto* t : tasks) list += t->s.files.dir + "\n";
  std::string problem;
  std::error_code ec;
  if (!make_private_directories(array.dir, ec))
    problem = "cannot create " + array.dir + ": " + ec.message();
  else if (!write_private_file(array.list(), list) || !write_private_file(array.script(), slurm_array_script(array), 0700))
    problem = "cannot write the array job's files in " + array.dir + ": " + std::strerror(errno);
  // Each task's record says which array it is being submitted in: a resume after a crash
  // finds the array by its comment.
  for (std::size_t i = 0; problem.empty() && i < tasks.size(); ++i)
    if (!write_slurm_job_record(tasks[i]->s.files, "submitting " + array.comment() + " " + std::to_string(i)))
      problem = "cannot write " + tasks[i]->s.files.job() + ": " + std::strerror(errno);
  std::string base;
  if (problem.empty()) {
    ++sbatch_calls_;
    ++arrays_;
    auto args =
        sbatch_array_arguments(array, tasks.size(), tasks.front()->s.options, "arun-" + options_.session_id, limit);
    const auto r = co_await slurm_client(std::move(args), options_.client_env);
    base = parsed_job_id(r);
    if (base.empty() && client_failure(r).find("Invalid job array specification") != std::string::npos) {
      // A cluster that refuses arrays after all (scontrol could not tell its MaxArraySize):
      // each instance goes on its own, from now on.
      arun_log().warn("sbatch refused an array of {} tasks ({}): submitting them one by one", tasks.size(),
                      client_failure(r));
      arrays_refused_ = true;
      std::vector<waiting*> alone;
      for (auto* t : tasks) {
        if (!write_slurm_job_record(t->s.files, "submitting")) {
          t->result.error = "cannot write " + t->s.files.job() + ": " + std::strerror(errno);
          t->wake->cancel();
          continue;
        }
        alone.push_back(t);
      }
      if (refused) {
        *refused = std::move(alone);  // the caller submits them within its fan-out's limit
      } else {
        for (auto* t : alone) co_await submit_alone(t);
      }
      co_return std::string();
    }
    if (base.empty()) problem = "sbatch could not submit the array job: " + client_failure(r);
  }
  if (problem.empty())
    arun_log().debug("slurm array job {}: {} tasks{} ({})", base, tasks.size(),
                     limit > 0 ? fmt::format(", {} at a time", limit) : std::string(), array.list());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (problem.empty())
      tasks[i]->result.id = base + "_" + std::to_string(i);
    else
      tasks[i]->result.error = problem;
    tasks[i]->wake->cancel();
  }
  co_return base;
}

// ---- fan-outs taken whole ----

void slurm_submitter::collect(waiting& w, std::size_t max_tasks) {
  const auto& share = *w.s.fan_out;
  auto [it, made] = fan_outs_.try_emplace(share.id, share);
  auto& f = it->second;
  ++f.arrived;
  f.last_arrival = clock_type::now();
  auto& group = f.collecting[w.s.options];
  group.push_back(&w);
  if (group.size() >= (arrays_refused_ ? 1 : std::max<std::size_t>(1, max_tasks))) cut(share.id, f, w.s.options);
  if (f.arrived == f.share.items) {
    // Every item started at once is in: no reason to wait.
    while (!f.collecting.empty()) cut(share.id, f, f.collecting.begin()->first);
  } else if (!f.quiet_wait) {
    f.quiet_wait = true;
    ++f.busy;
    asio::co_spawn(ex_, cut_when_quiet(share.id), asio::detached);
  }
  share_out(share.id);
}

void slurm_submitter::cut(std::uint64_t id, fan_out_state& f, const std::vector<std::string>& options) {
  auto found = f.collecting.find(options);
  if (found == f.collecting.end()) return;
  fan_out_part p;
  p.tasks = std::move(found->second);
  p.options = options;
  f.collecting.erase(found);
  const auto number = f.budget.add(p.tasks.size());
  for (auto* t : p.tasks) {
    t->result.fan_out = id;
    t->result.part = number;
  }
  f.parts.push_back(std::move(p));
}

asio::awaitable<void> slurm_submitter::cut_when_quiet(std::uint64_t id) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer quiet(ex);
  for (;;) {
    auto& f = fan_outs_.at(id);
    // Items started later (as earlier ones end, or retries) come a few at a time.
    const auto until = f.last_arrival + (f.arrived > f.share.items ? window : fan_out_quiet);
    if (clock_type::now() >= until || f.collecting.empty()) break;
    quiet.expires_at(until);
    co_await quiet.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  auto& f = fan_outs_.at(id);
  while (!f.collecting.empty()) cut(id, f, f.collecting.begin()->first);
  f.quiet_wait = false;
  --f.busy;
  share_out(id);
  forget_if_done(id);
}

void slurm_submitter::share_out(std::uint64_t id) {
  auto& f = fan_outs_.at(id);
  if (f.adoptions_pending > 0) return;  // the earlier arun's jobs are counted first
  bool raised = false;
  for (const auto& g : f.budget.share_out()) {
    if (g.first) {
      ++f.busy;
      asio::co_spawn(ex_, submit_part(id, g.part, g.limit), asio::detached);
    } else {
      raised = true;
    }
  }
  // Raises wait a moment: the jobs a poll saw end together free their units one by one.
  if (raised) set_limits_soon(id);
}

void slurm_submitter::set_limits_soon(std::uint64_t id) {
  auto& f = fan_outs_.at(id);
  if (f.limits_pending) return;
  f.limits_pending = true;
  ++f.busy;
  asio::co_spawn(ex_, raise_limits_after_window(id), asio::detached);
}

asio::awaitable<void> slurm_submitter::submit_part(std::uint64_t id, std::size_t number, int limit) {
  auto tasks = std::move(fan_outs_.at(id).parts.at(number).tasks);
  fan_outs_.at(id).parts.at(number).tasks.clear();
  std::string array_id;
  std::vector<waiting*> refused;
  if (tasks.size() == 1)
    co_await submit_alone(tasks.front());
  else if (tasks.size() > 1 && arrays_refused_)
    refused = std::move(tasks);  // sbatch refuses arrays here: no use asking again
  else if (tasks.size() > 1)
    array_id = co_await submit_array(std::move(tasks), limit, &refused);  // (none: every one was withdrawn)
  auto& f = fan_outs_.at(id);
  if (!refused.empty()) {
    // Refused as an array: the part gives its units back, and each of its jobs becomes a
    // part of its own, submitted as units come free.
    for (std::size_t i = 0; i < refused.size(); ++i) f.budget.finished(number);
    for (auto* task : refused) {
      fan_out_part single;
      single.tasks.push_back(task);
      single.options = task->s.options;
      task->result.part = f.budget.add(1);
      f.parts.push_back(std::move(single));
      task->wake->cancel();  // a cancel asked while sbatch ran can withdraw it now
    }
    share_out(id);
  }
  auto& p = f.parts.at(number);
  p.array_id = std::move(array_id);
  p.limit_set = limit;
  --f.busy;
  // Units given to the part while sbatch ran are its limit's raise.
  if (!p.array_id.empty() && f.budget.limit(number) > limit) set_limits_soon(id);
  forget_if_done(id);
}

asio::awaitable<void> slurm_submitter::raise_limits_after_window(std::uint64_t id) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer wait(ex, window);
  co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
  fan_outs_.at(id).limits_pending = false;
  for (std::size_t i = 0; i < fan_outs_.at(id).parts.size(); ++i) {
    auto& p = fan_outs_.at(id).parts[i];
    const int wanted = fan_outs_.at(id).budget.limit(i);
    // An earlier arun's array gets its limit whatever it had (lowered, or raised).
    // (0: its jobs have all ended; Slurm would take it for no limit at all.)
    if (p.array_id.empty() || wanted <= 0 || (p.limit_set != limit_unknown && wanted <= p.limit_set)) continue;
    ++limit_updates_;
    const auto array_id = p.array_id;
    const bool earlier = p.limit_set == limit_unknown;
    const auto r = co_await slurm_client(array_task_limit(array_id, wanted), options_.client_env);
    // Tasks that have ended make scontrol exit 1 ("Job has already finished") while the
    // limit is still set for the others.
    const bool set = r.succeeded() || r.err.text.find("No error") != std::string::npos ||
                     r.out.text.find("No error") != std::string::npos;
    auto& again = fan_outs_.at(id).parts[i];
    if (set) {
      again.limit_set = std::max(again.limit_set, wanted);
      arun_log().debug("slurm array job {}: {} tasks at a time", array_id, wanted);
    } else if (earlier) {
      // Its tasks may start as the earlier arun let them: each one left holds a unit, and
      // the new items wait for them (docs/scale-out.md, resume).
      auto& f = fan_outs_.at(id);
      f.budget.uncontrolled(i);
      again.limit_set = limit_out_of_reach;
      arun_log().warn("cannot set the task limit of Slurm array job {}, which the earlier arun submitted, to {}: {}; "
                      "counting each of its {} tasks left against the loop's limit of {}",
                      array_id, wanted, client_failure(r), f.budget.held(i), f.share.throttle);
    } else {
      arun_log().warn("cannot raise the task limit of Slurm array job {} to {}: {}; it goes on with {}", array_id,
                      wanted, client_failure(r), again.limit_set);
    }
  }
  --fan_outs_.at(id).busy;
  forget_if_done(id);
}

void slurm_submitter::job_ended(std::uint64_t id, std::size_t part) {
  const auto it = fan_outs_.find(id);
  if (it == fan_outs_.end()) return;
  it->second.budget.finished(part);
  share_out(id);
  forget_if_done(id);
}

// ---- an earlier arun's jobs, taken up ----

void slurm_submitter::adopting(const fan_out_share& share, asio::any_io_executor ex) {
  if (!ex_) ex_ = ex;
  auto& f = fan_outs_.try_emplace(share.id, share).first->second;
  ++f.arrived;  // one of the items started at once: the new ones need not wait for it
  f.last_arrival = clock_type::now();
  ++f.adoptions_pending;
  ++f.busy;
}

bool slurm_submitter::adopted(std::uint64_t id, const std::string& job, bool queued, bool running) {
  auto& f = fan_outs_.at(id);
  --f.adoptions_pending;
  --f.busy;
  if (queued) {
    auto& tally = f.adopting[job.substr(0, job.find('_'))];
    tally.array = job.find('_') != std::string::npos;
    ++tally.jobs;
    // A job of its own has no task limit to hold it back: it counts as running.
    if (running || !tally.array) ++tally.running;
  }
  if (f.adoptions_pending == 0) take_in_adopted(id);
  forget_if_done(id);
  return queued;
}

void slurm_submitter::take_in_adopted(std::uint64_t id) {
  auto& f = fan_outs_.at(id);
  bool arrays = false;
  for (const auto& [key, tally] : f.adopting) {
    const auto number = f.budget.add_adopted(tally.jobs, tally.running);
    fan_out_part p;
    if (tally.array) {  // a job of its own has no task limit
      p.array_id = key;
      p.limit_set = limit_unknown;
      arrays = true;
    }
    f.parts.push_back(std::move(p));
    f.adopted_parts[key] = number;
  }
  f.adopting.clear();
  if (arrays) set_limits_soon(id);
  share_out(id);
}

void slurm_submitter::adopted_ended(std::uint64_t id, const std::string& job) {
  const auto it = fan_outs_.find(id);
  if (it == fan_outs_.end()) return;
  auto& f = it->second;
  const auto array_id = job.substr(0, job.find('_'));
  if (const auto part = f.adopted_parts.find(array_id); part != f.adopted_parts.end()) {
    f.budget.finished(part->second);
    share_out(id);
  } else if (auto tally = f.adopting.find(array_id); tally != f.adopting.end() && tally->second.jobs > 0) {
    // Ended before the last of them was adopted.
    --tally->second.jobs;
    if (tally->second.running > 0) --tally->second.running;
  }
  forget_if_done(id);
}

void slurm_submitter::forget_if_done(std::uint64_t id) {
  const auto it = fan_outs_.find(id);
  if (it == fan_outs_.end()) return;
  const auto& f = it->second;
  if (f.busy == 0 && f.collecting.empty() && f.budget.drained()) fan_outs_.erase(it);
}

}  // namespace arun::io
