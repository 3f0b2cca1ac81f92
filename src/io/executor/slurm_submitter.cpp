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

#include <cerrno>
#include <random>
#include <cstring>

namespace arun::io {
namespace asio = boost::asio;

bool write_slurm_job_record(const slurm_job_files& files, std::string_view text) {
  return replace_private_file(files.job(), std::string(text) + "\n");
}

namespace {

// What sbatch --parsable answered: "ID" or "ID;CLUSTER".
std::string parsed_job_id(const process_result& r) {
  return r.succeeded() ? r.out.text.substr(0, r.out.text.find_first_of(";\n")) : std::string();
}

}  // namespace

slurm_submitter::slurm_submitter(const slurm_options& options) : options_(options) {
  std::random_device random;
  process_tag_ = fmt::format("{:08x}", random());
}

asio::awaitable<slurm_submitted> slurm_submitter::submit(slurm_submission s) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer wake(ex, asio::steady_timer::time_point::max());
  waiting me;
  me.s = std::move(s);
  me.wake = &wake;
  batches_[me.s.options].push_back(&me);
  if (!flush_pending_) {
    flush_pending_ = true;
    asio::co_spawn(ex, flush_after_window(), asio::detached);
  }
  // Woken (the timer cancelled) once the submission that carries this one has its answer.
  while (me.result.id.empty() && me.result.error.empty())
    co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return me.result;
}

asio::awaitable<void> slurm_submitter::flush_after_window() {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer window_timer(ex, window);
  co_await window_timer.async_wait(asio::as_tuple(asio::use_awaitable));
  flush_pending_ = false;
  auto batches = std::move(batches_);
  batches_.clear();
  for (auto& [options, group] : batches)
    for (std::size_t from = 0; from < group.size(); from += max_array_tasks) {
      const auto to = std::min(group.size(), from + max_array_tasks);
      std::vector<waiting*> chunk(group.begin() + static_cast<std::ptrdiff_t>(from),
                                  group.begin() + static_cast<std::ptrdiff_t>(to));
      // Each sbatch in a coroutine of its own: one slow submission does not hold the others.
      if (chunk.size() == 1) {
        auto alone = submit_alone(chunk.front());
        asio::co_spawn(ex, std::move(alone), asio::detached);
      } else {
        auto together = submit_array(std::move(chunk));
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

asio::awaitable<void> slurm_submitter::submit_array(std::vector<waiting*> tasks) {
  const auto array = slurm_array_files_for(options_.shared_dir, options_.session_id, process_tag_, ++arrays_made_);
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
    auto args = sbatch_array_arguments(array, tasks.size(), tasks.front()->s.options, "arun-" + options_.session_id);
    const auto r = co_await slurm_client(std::move(args), options_.client_env);
    base = parsed_job_id(r);
    if (base.empty() && client_failure(r).find("Invalid job array specification") != std::string::npos) {
      // A cluster whose MaxArraySize is below this array's size (or that refuses arrays):
      // each instance goes on its own.
      arun_log().warn("sbatch refused an array of {} tasks ({}): submitting them one by one", tasks.size(),
                      client_failure(r));
      for (auto* t : tasks) {
        if (!write_slurm_job_record(t->s.files, "submitting")) {
          t->result.error = "cannot write " + t->s.files.job() + ": " + std::strerror(errno);
          t->wake->cancel();
          continue;
        }
        co_await submit_alone(t);
      }
      co_return;
    }
    if (base.empty()) problem = "sbatch could not submit the array job: " + client_failure(r);
  }
  if (problem.empty()) arun_log().debug("slurm array job {}: {} tasks ({})", base, tasks.size(), array.list());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (problem.empty())
      tasks[i]->result.id = base + "_" + std::to_string(i);
    else
      tasks[i]->result.error = problem;
    tasks[i]->wake->cancel();
  }
}

}  // namespace arun::io
