#include "executor/slurm_executor.hpp"

#include "executor/slurm_cleanup.hpp"
#include "executor/slurm_job_dirs.hpp"
#include "executor/slurm_clients.hpp"
#include "executor/slurm_lookups.hpp"
#include "executor/slurm_pending.hpp"
#include "executor/slurm_submitter.hpp"
#include "executor/slurm_queue.hpp"
#include "executor/slurm_script.hpp"
#include "files/fd_write.hpp"
#include "files/private_files.hpp"
#include "output/arun_log.hpp"
#include "process/output_capture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <optional>
#include <system_error>
#include <map>
#include <unordered_set>
#include <utility>

namespace arun::io {
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

// The output file of a job, read as it grows: at most `head` bytes while the job runs (what
// --max-output keeps), and at its end the last `tail` bytes (the failure snippet). A step
// that prints gigabytes costs arun no more reading than one that prints the limit.
class file_tail {
public:
  file_tail(std::string path, std::uint64_t head, std::uint64_t tail) : path_(std::move(path)), head_(head), tail_(tail) {}
  ~file_tail() {
    if (fd_ >= 0) ::close(fd_);
  }
  file_tail(const file_tail&) = delete;
  file_tail& operator=(const file_tail&) = delete;

  void reopen() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  /// What the file gained, up to the head's end.
  void read_new(output_capture& into) { read_until(into, head_); }

  /// At the job's end: the rest of the head, then what lies between it and the last `tail`
  /// bytes counted unread, then those.
  void read_end(output_capture& into) {
    read_until(into, head_);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) return;
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size > offset_ + tail_) {
      into.skip(size - tail_ - offset_);
      offset_ = size - tail_;
    }
    read_until(into, size);
  }

private:
  void read_until(output_capture& into, std::uint64_t end) {
    if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return;
    char buf[64 * 1024];
    while (offset_ < end) {
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, end - offset_));
      const auto n = ::pread(fd_, buf, want, static_cast<off_t>(offset_));
      if (n <= 0) return;
      offset_ += static_cast<std::uint64_t>(n);
      into.append(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  std::string path_;
  std::uint64_t head_, tail_;
  int fd_ = -1;
  std::uint64_t offset_ = 0;
};

std::string nul_joined(const std::vector<std::string>& items) {
  std::string joined;
  for (const auto& item : items) {
    joined += item;
    joined += '\0';
  }
  return joined;
}

// Everything the wrapper reads, written fresh: a retry of the same instance reuses the
// directory, and must never see the last attempt's exit file.
std::string prepare_job_files(const slurm_job_files& files, const launch_request& launch, const std::string& working_dir) {
  std::error_code ec;
  if (!make_private_directories(files.dir, ec)) return "cannot create the job directory " + files.dir + ": " + ec.message();
  // First: a crash from here on leaves `submitting`, and a resume looks for the job by its
  // comment (or its exit file) instead of trusting an earlier attempt's id.
  if (!write_slurm_job_record(files, "submitting")) return "cannot write " + files.job() + ": " + std::strerror(errno);
  for (const auto& stale : {files.status(), files.out(), files.err(), files.dir + "/exit.tmp", files.input()})
    std::filesystem::remove(stale, ec);
  std::string input;
  if (launch.stdin_fd >= 0) {
    // A node cannot inherit arun's descriptor: the input travels as a file.
    char buf[64 * 1024];
    for (off_t at = 0;;) {
      const auto n = ::pread(launch.stdin_fd, buf, sizeof buf, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      input.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
  }
  const auto script = slurm_wrapper_script(files, working_dir, launch.stdin_fd >= 0);
  if (!write_private_file(files.argv(), nul_joined(launch.argv)) || !write_private_file(files.env(), nul_joined(launch.env)) ||
      (launch.stdin_fd >= 0 && !write_private_file(files.input(), input)) ||
      !write_private_file(files.script(), script, 0700))
    return "cannot write the job's files in " + files.dir + ": " + std::strerror(errno);
  return {};
}

bool terminal_state(std::string_view state) {
  return state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" && state != "COMPLETING" &&
         state != "SUSPENDED" && state != "REQUEUED" && state != "RESIZING" && state != "SIGNALING" &&
         state != "STAGE_OUT" && state != "STOPPED" && state != "REQUEUE_HOLD" && state != "REQUEUE_FED";
}

}  // namespace

namespace {

// The job's exit status, looked up through a fresh listing of its directory: a shared
// filesystem may answer a plain open from a cache that has not seen the file appear.
std::optional<slurm_exit_status> exit_status_listed(const slurm_job_files& files) {
  std::error_code ec;
  bool listed = false;
  for (std::filesystem::directory_iterator it(files.dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename() == "exit") listed = true;
  const auto text = listed ? read_whole_file(files.status()) : std::nullopt;
  return text ? parse_slurm_exit(*text) : std::nullopt;
}

// The environment and input may hold secrets: they do not stay on the shared filesystem.
// Not in a coroutine: g++ 12 cannot keep a braced list of strings in a coroutine frame.
void remove_secrets(const slurm_job_files& files) {
  std::error_code ec;
  for (const auto& used : {files.env(), files.argv(), files.input()}) std::filesystem::remove(used, ec);
}

// Which of two files was modified first: negative `a`, positive `b`, 0 at the same instant;
// nothing when either cannot be looked at.
std::optional<int> modification_order(const std::string& a, const std::string& b) {
  struct stat first {}, second {};
  if (::stat(a.c_str(), &first) != 0 || ::stat(b.c_str(), &second) != 0) return std::nullopt;
  const auto key = [](const struct stat& s) { return std::pair(s.st_mtim.tv_sec, s.st_mtim.tv_nsec); };
  return key(first) < key(second) ? -1 : key(second) < key(first) ? 1 : 0;
}

// Whether job `id`, which arun was cancelling (its record says so), had written its exit
// status before: it ended on its own, and its result stands.
bool ended_before_cancel(const slurm_job_files& files, const std::string& id) {
  const auto status = exit_status_listed(files);
  if (!status || status->job_id != id) return false;
  const auto order = modification_order(files.status(), files.job());
  if (!order) return false;
  if (*order != 0) return *order < 0;
  // The same instant (a coarse filesystem clock): an exit a signal did not cause.
  return !status->signal && status->error.empty() && status->exit_code && *status->exit_code < 128;
}

std::vector<std::string> squeue_one(const std::string& id) { return {"squeue", "--noheader", "--array", "-j", id, "-o", "%i"}; }

// Waits (a minute at most) until job `id` has left the queue; false if it has not.
asio::awaitable<bool> left_the_queue(std::string id, const std::vector<std::string>& env) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer pause(ex);
  for (int attempt = 0; attempt < 60; ++attempt) {
    const auto r = co_await slurm_client(squeue_one(id), env);
    if (r.succeeded() && r.out.text.find_first_not_of(" \n") == std::string::npos) co_return true;
    if (!r.succeeded() && client_failure(r).find("Invalid job id") != std::string::npos) co_return true;
    pause.expires_after(std::chrono::seconds(1));
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return false;
}

// Whether the job `id` recorded in `files` was cut short by the emergency stop of an earlier
// arun: the stop's marker is newer than the record, and the job left no exit status.
bool cancelled_in_flight(const slurm_options& o, const slurm_job_files& files, const std::string& id) {
  const auto order = modification_order(slurm_emergency_stop_marker(o.jobs_dir), files.job());
  if (!order || *order < 0) return false;
  const auto status = exit_status_listed(files);
  return !(status && status->job_id == id);
}

}  // namespace

/// What the jobs of one run share besides the queue.
struct slurm_run_memory {
  explicit slurm_run_memory(const slurm_options& o)
      : licenses(o.client_env), earlier(o.session_id, o.client_env), array_limit(o.client_env),
        submitter(o, array_limit), cancels(o.client_env) {}
  slurm_licenses licenses;
  slurm_earlier_jobs earlier;
  slurm_array_limit array_limit;
  slurm_submitter submitter;
  scancel_batches cancels;
  /// Hashes of the instances this arun has submitted or taken up: a later attempt of one (a
  /// retry) is new work, not the earlier attempt's job.
  std::unordered_set<std::uint64_t> started;
  /// Instances whose job arun has collected, and their job directories: removed once the
  /// journal has their results (release), or at the run's end.
  std::map<std::string, std::string, std::less<>> collected;
  /// Jobs waiting in the queue worth a mention (held, requeued, pending long): the status line's notes.
  std::map<std::string, std::string, std::less<>> waiting;
  std::uint64_t submitted = 0;
  std::uint64_t taken_up = 0;
};

namespace {

struct follow_context {
  std::shared_ptr<slurm_queue> jobs;
  std::shared_ptr<slurm_run_memory> memory;
  const slurm_options* options;
};

// The job an earlier arun submitted for this instance and no journal took in: its id, or ""
// when the instance has to be submitted.
asio::awaitable<std::string> earlier_job(const follow_context& c, const slurm_job_files& files, const std::string& key) {
  const auto& o = *c.options;
  if (!c.memory->started.insert(std::hash<std::string>{}(key)).second) co_return std::string();
  const auto text = read_whole_file(files.job());
  const auto record = text ? parse_slurm_job_record(*text) : std::nullopt;
  if (!record) co_return std::string();  // never submitted (a fresh run: no directory yet)
  // Its result reached an earlier arun: the journal has it (a failure runs again as new
  // work), unless that arun stopped before the journal line was written.
  // A done job without its exit file (cancelled before it ran, refused, lost) had no result
  // to take up: the instance runs anew.
  if (record->done) {
    if (o.recorded && o.recorded(key)) co_return std::string();
    const auto status = exit_status_listed(files);
    co_return status && status->job_id == record->id ? record->id : std::string();
  }
  // Being cancelled when arun stopped (a Ctrl-C, a failed sibling): a result it reached on
  // its own, before the cancel, is taken up; one the cancel cut short runs anew, as a
  // cancelled step does, once what is left of the job has gone.
  if (record->cancelling) {
    if (ended_before_cancel(files, record->id)) co_return record->id;
    const bool still_queued = co_await c.memory->earlier.queued(record->id);  // g++ 12: not in a condition
    if (still_queued) {
      co_await c.memory->cancels.cancel(record->id, nullptr);
      const bool gone = co_await left_the_queue(record->id, o.client_env);
      if (!gone) {
        arun_log().warn("{}: Slurm job {} is still in the queue after its cancel: following it", key, record->id);
        co_return record->id;
      }
    }
    arun_log().info("{}: Slurm job {} was being cancelled when arun stopped: running the step again", key, record->id);
    co_return std::string();
  }
  // In flight when arun stopped, whatever the journal says of the instance's earlier runs;
  // unless a second Ctrl-C cancelled it after it was submitted and it left the queue without
  // a result: it runs anew now, not after lost_after as a lost job.
  if (!record->id.empty()) {
    if (cancelled_in_flight(o, files, record->id)) {
      const bool still_queued = co_await c.memory->earlier.queued(record->id);  // g++ 12: not in a condition
      if (!still_queued) {
        arun_log().info("{}: Slurm job {} was cancelled by a second Ctrl-C before it ended: running the step again",
                        key, record->id);
        co_return std::string();
      }
    }
    co_return record->id;
  }
  // `submitting`: arun stopped while sbatch ran. The job, if sbatch made one, is in the
  // queue under the instance's comment (or as a task of the array it was submitted in), or
  // has finished and written its exit file.
  if (record->array_comment.empty()) {
    if (auto id = co_await c.memory->earlier.find(key); !id.empty()) co_return id;
  } else if (auto task = co_await c.memory->earlier.find(record->array_comment); !task.empty()) {
    co_return task.substr(0, task.find('_')) + "_" + std::to_string(record->task);
  }
  if (const auto status = exit_status_listed(files)) co_return status->job_id;
  co_return std::string();
}

// Submits (or adopts) the job and follows it to its end.
asio::awaitable<process_result> follow(follow_context c, job_spec job, std::shared_ptr<followed_job> me) {
  const auto& o = *c.options;
  process_result r;
  const auto started = clock_type::now();
  if (o.jobs_dir.empty()) {
    r.launch_error = "no private job directory could be made below " + o.shared_dir + " (see arun's log)";
    co_return r;
  }
  const auto files = slurm_job_files_for(o.jobs_dir, job.key);
  std::error_code ec;
  const std::string working_dir =
      job.process.launch.working_dir.empty() ? std::filesystem::current_path(ec).string() : job.process.launch.working_dir;
  struct fan_out_unit {
    slurm_submitter& submitter;
    std::uint64_t fan_out = 0;
    std::size_t part = 0;
    std::string adopted;  ///< an earlier arun's job: its array's part is the submitter's to find
    ~fan_out_unit() {
      if (fan_out == 0) return;
      if (adopted.empty())
        submitter.job_ended(fan_out, part);
      else
        submitter.adopted_ended(fan_out, adopted);
    }
  } ended_in{c.memory->submitter};
  if (!job.adopt)
    if (auto earlier = co_await earlier_job(c, files, job.key); !earlier.empty()) {
      arun_log().info("{}: taking up Slurm job {}, which an earlier arun of this session submitted", job.key, earlier);
      job.adopt = job_handle{"slurm", std::move(earlier)};
      ++c.memory->taken_up;
    }
  if (job.adopt) {
    me->id = job.adopt->id;
    // Found by a comment or an exit file: the record names the job from now on.
    if (!write_slurm_job_record(files, me->id))
      arun_log().warn("{}: cannot record job {} in {} ({})", job.key, me->id, files.job(), std::strerror(errno));
    // A leaf of a fan-out: the job counts against the loop's limit with the new items
    // (docs/scale-out.md, resume). Said before anything is awaited.
    if (job.fan_out) {
      const auto ex = co_await asio::this_coro::executor;  // g++ 12: not inside another call's arguments
      c.memory->submitter.adopting(*job.fan_out, ex);
      const auto state = co_await c.memory->earlier.state(me->id);
      // squeue could not tell: in the queue, and running, as far as the limit goes.
      const bool queued = !state || (!state->empty() && !terminal_state(*state));
      const bool running = !state || (queued && *state != "PENDING");
      if (c.memory->submitter.adopted(job.fan_out->id, me->id, queued, running)) {
        ended_in.fan_out = job.fan_out->id;
        ended_in.adopted = me->id;
      }
    }
  } else {
    if (auto problem = prepare_job_files(files, job.process.launch, working_dir); !problem.empty()) {
      r.launch_error = problem;
      co_return r;
    }
    // The command and environment are in the job's files now: a fan-out's thousands of
    // queued jobs do not each keep a copy (a large context value travels in it).
    std::vector<std::string>().swap(job.process.launch.env);
    std::vector<std::string>().swap(job.process.launch.argv);
    std::optional<std::chrono::seconds> backstop;
    if (job.process.timeout && job.process.timeout->count() > 0)
      // Slurm's own limit only catches a job arun can no longer stop itself.
      backstop = std::chrono::ceil<std::chrono::seconds>(*job.process.timeout + job.process.kill_grace) +
                 std::chrono::minutes(1);
    job_resources resources = job.resources ? *job.resources : job_resources{};
    bool licensed = false;
    if (!job.provider.empty()) licensed = co_await c.memory->licenses.defines(job.provider);  // g++ 12: not in a condition
    if (licensed) resources = with_provider_license(&resources, job.provider);
    slurm_submission submission;
    submission.files = files;
    submission.key = job.key;
    submission.options = sbatch_resource_options(resources, backstop);
    submission.fan_out = job.fan_out;
    auto submitted = co_await c.memory->submitter.submit(std::move(submission), me->wake, me->cancel_requested);
    // However the follow ends, the job's unit of its fan-out's throttle goes on.
    ended_in.fan_out = submitted.fan_out;
    ended_in.part = submitted.part;
    if (submitted.id.empty()) {
      r.launch_error = std::move(submitted.error);
      r.cancelled = submitted.cancelled;
      co_return r;
    }
    me->id = std::move(submitted.id);
    ++c.memory->submitted;
    if (!write_slurm_job_record(files, me->id))
      arun_log().warn("{}: cannot record job {} in {} ({}): a resume after a crash would submit it again", job.key,
                      me->id, files.job(), std::strerror(errno));
  }
  if (job.submitted) job.submitted({"slurm", me->id});
  arun_log().debug("slurm job {} for {} ({})", me->id, job.key, files.dir);

  output_capture out(job.process.limits, job.process.on_line ? line_sink([&job](std::string_view l, bool cut) {
    job.process.on_line(stream_id::out, l, cut);
  }) : line_sink{});
  output_capture err(job.process.limits, job.process.on_line ? line_sink([&job](std::string_view l, bool cut) {
    job.process.on_line(stream_id::err, l, cut);
  }) : line_sink{});
  const auto head = job.process.limits.max_bytes, tail = job.process.limits.tail_bytes;
  file_tail out_file(files.out(), head, tail), err_file(files.err(), head, tail);

  // Followed until here, whatever ends the follow (a line callback may throw).
  c.jobs->follow(*me);
  struct unfollow {
    slurm_queue& jobs;
    followed_job& job;
    ~unfollow() { jobs.forget(job); }
  } unfollow_at_end{*c.jobs, *me};
  std::optional<clock_type::time_point> running_since, gone_since, term_sent, kill_sent;
  std::optional<slurm_exit_status> status;
  std::string refused;  ///< why Slurm will never start the job
  pending_watch pending{o, job.key};
  struct unnote {
    slurm_run_memory& memory;
    const std::string& key;
    ~unnote() { memory.waiting.erase(key); }
  } unnote_at_end{*c.memory, job.key};
  for (;;) {
    co_await me->wake.async_wait(asio::as_tuple(asio::use_awaitable));
    me->wake.expires_at(clock_type::time_point::max());
    const auto state = c.jobs->state_of(me->id);
    // A job still queued has written nothing yet: thousands of queued tasks of a fan-out
    // cost no file reads per poll.
    if (state != "PENDING") {
      out_file.read_new(out);
      err_file.read_new(err);
      if (const auto text = read_whole_file(files.status())) {
        // Another job's file (one of the instance submitted before a crash) is not this one's.
        status = parse_slurm_exit(*text);
        if (status && status->job_id == me->id) break;
        status.reset();
      }
    }
    const auto now = clock_type::now();
    if (state == "PENDING" && !term_sent) {
      const auto reason = c.jobs->reason_of(me->id);
      if (auto why = slurm_never_starts(reason); !why.empty()) {
        refused = "Slurm will not start job " + me->id + " (pending, reason " + reason + "): " + why;
        co_await c.memory->cancels.cancel(me->id, nullptr);
        break;
      }
    }
    if (!term_sent) {
      const auto wait = slurm_waiting(state, c.jobs->reason_of(me->id));
      if (auto why = pending.look(wait, me->id, running_since.has_value(), now, c.memory->waiting); !why.empty()) {
        refused = std::move(why);
        co_await c.memory->cancels.cancel(me->id, nullptr);
        break;
      }
    }
    if (!state.empty() && !terminal_state(state)) {
      gone_since.reset();
      if (state == "RUNNING" && !running_since) {
        running_since = now;
        if (job.running) job.running();
      }
    } else if (c.jobs->listed_ok()) {
      if (!gone_since) gone_since = now;
      // Killed (after the TERM's grace), or cancelled before it ever ran: no exit file will
      // come. Otherwise the file may just be late on a shared filesystem: lost_after.
      const bool ended_by_us = kill_sent || (term_sent && !running_since);
      if (ended_by_us && now - *gone_since >= std::chrono::seconds(2)) break;
      if (now - *gone_since >= o.lost_after) break;
    }
    const bool past_deadline = job.process.timeout && job.process.timeout->count() > 0 && running_since &&
                               now - *running_since >= *job.process.timeout;
    if (past_deadline && !r.cancelled) r.timed_out = true;
    if (me->cancel_requested && !r.timed_out) r.cancelled = true;
    if ((r.timed_out || r.cancelled) && !term_sent) {
      term_sent = now;
      // Should arun stop before the job is gone, a resume knows it was being cancelled.
      if (r.cancelled && !write_slurm_job_record(files, "cancelling " + me->id))
        arun_log().warn("{}: cannot record job {} as cancelling in {} ({})", job.key, me->id, files.job(),
                        std::strerror(errno));
      // A job not seen running gets a plain cancel: Slurm applies it to this job (or array
      // task) alone, where a signal to a pending array task reaches every pending task of
      // its array. A running one gets TERM first, so the step can end as it would locally.
      const char* signal = running_since ? "TERM" : nullptr;
      co_await c.memory->cancels.cancel(me->id, signal);
    } else if (term_sent && !running_since && now - *term_sent >= job.process.kill_grace && !state.empty() &&
               !terminal_state(state)) {
      // Still queued after a plain cancel (the controller was busy, scancel failed): again.
      term_sent = now;
      co_await c.memory->cancels.cancel(me->id, nullptr);
    } else if (term_sent && !kill_sent && running_since && now - *term_sent >= job.process.kill_grace) {
      kill_sent = now;
      co_await c.memory->cancels.cancel(me->id, "KILL");
      co_await c.memory->cancels.cancel(me->id, nullptr);
    }
  }
  // A shared filesystem shows a file's new size to a new open (close-to-open): read the
  // output's end through fresh descriptors.
  out_file.reopen();
  err_file.reopen();
  out_file.read_end(out);
  err_file.read_end(err);
  out.finish();
  err.finish();
  r.out = out.take();
  r.err = err.take();
  r.duration = clock_type::now() - started;
  // What of that the job waited in the queue: its step's duration is the rest.
  std::optional<std::chrono::nanoseconds> seen_running_after;
  if (running_since) seen_running_after = *running_since - started;
  r.queued = slurm_queue_time(r.duration, status ? status->ran : std::nullopt, seen_running_after,
                              status.has_value() || running_since.has_value());
  bool lost = false;
  if (!refused.empty()) {
    r.launch_error = std::move(refused);
  } else if (status && !status->error.empty()) {
    r.launch_error = "the job could not start the step: " + status->error;
  } else if (status) {
    r.exit_code = status->exit_code;
    r.signal = status->signal;
  } else if (r.timed_out || r.cancelled) {
    r.signal = kill_sent ? SIGKILL : SIGTERM;
  } else {
    lost = true;
    r.launch_error = "Slurm job " + me->id + " left the queue without an exit status (lost; its files are in " + files.dir + ")";
    co_await c.memory->cancels.cancel(me->id, nullptr);  // in case it runs on where squeue cannot see it
  }
  remove_secrets(files);
  // The result goes to the engine now: a resume takes this job up again only if the journal
  // never got it.
  if (!write_slurm_job_record(files, "done " + me->id))
    arun_log().warn("{}: cannot record job {} as done in {} ({})", job.key, me->id, files.job(), std::strerror(errno));
  // The raw output stays on the shared filesystem only until the journal holds the result;
  // a lost job's stays for a look (its error names the directory) until `sessions clean`.
  if (!lost && o.after_journal) {
    c.memory->collected.insert_or_assign(job.key, files.dir);
  } else if (!lost) {
    if (auto problem = remove_slurm_job_directory(files.dir); !problem.empty()) arun_log().warn("{}: {}", job.key, problem);
  }
  co_return r;
}

// As run_process: the job is followed in a coroutine of its own, and the caller's
// cancellation becomes a cancel request, so the scancel escalation runs to its end.
struct follow_initiation {
  template <typename Handler>
  void operator()(Handler&& handler, std::shared_ptr<slurm_queue>* jobs, std::shared_ptr<slurm_run_memory> memory,
                  const slurm_options* options, job_spec job) const {
    auto ex = asio::get_associated_executor(handler);
    if (!*jobs) *jobs = std::make_shared<slurm_queue>(ex, *options);
    follow_context c{*jobs, std::move(memory), options};
    auto me = std::make_shared<followed_job>(ex);
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) {
      slot.assign([weak = std::weak_ptr<followed_job>(me)](asio::cancellation_type type) {
        if (type == asio::cancellation_type::none) return;
        if (auto m = weak.lock()) {
          m->cancel_requested = true;
          m->wake.cancel();
        }
      });
    }
    asio::co_spawn(ex, follow(std::move(c), std::move(job), me),
                   [me, slot, h = std::forward<Handler>(handler)](std::exception_ptr e, process_result r) mutable {
                     if (slot.is_connected()) slot.clear();
                     std::move(h)(e, std::move(r));
                   });
  }
};

}  // namespace

namespace {

// An embedder that names no job directory gets one made as the CLI makes it (checked,
// private, unguessable); when none can be made, every job fails to launch, saying why.
slurm_options with_jobs_dir(slurm_options o) {
  if (!o.jobs_dir.empty()) return o;
  auto dirs = prepare_slurm_job_dirs(o.shared_dir, o.session_id, {}, false);
  if (!dirs.error.empty()) {
    arun_log().error("slurm: {}", dirs.error);
    return o;
  }
  o.shared_dir = std::move(dirs.shared_dir);
  o.jobs_dir = std::move(dirs.jobs_dir);
  return o;
}

}  // namespace

slurm_executor::slurm_executor(slurm_options options)
    : options_(with_jobs_dir(std::move(options))), memory_(std::make_shared<slurm_run_memory>(options_)) {}

slurm_executor::~slurm_executor() = default;

slurm_executor::statistics slurm_executor::stats() const noexcept {
  statistics s;
  s.submitted = memory_->submitted;
  s.taken_up = memory_->taken_up;
  s.sbatch_calls = memory_->submitter.sbatch_calls();
  s.arrays = memory_->submitter.arrays();
  s.limit_updates = memory_->submitter.limit_updates();
  s.queue_polls = queue_ ? queue_->polls() : 0;
  return s;
}

asio::awaitable<process_result> slurm_executor::run(job_spec job) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(std::exception_ptr, process_result)>(
      follow_initiation{}, asio::use_awaitable, &queue_, memory_, &options_, std::move(job));
}

namespace {

// Whether `key` is `instance` or an instance inside it (`loop[2]/leaf` in `loop[2]`, `fan[3]`
// in `fan`).
bool key_in_instance(std::string_view key, std::string_view instance) {
  if (!key.starts_with(instance)) return false;
  return key.size() == instance.size() || key[instance.size()] == '/' || key[instance.size()] == '[';
}

// This process's array files (TAG-N.list, .sh, .I.log) in `arrays`, never following a link.
void remove_array_files(const std::string& arrays, const std::string& tag) {
  const int fd = ::open(arrays.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  std::error_code ec;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(arrays, ec), end; !ec && it != end; it.increment(ec))
    if (auto name = it->path().filename().string(); name.starts_with(tag + "-")) names.push_back(std::move(name));
  for (const auto& name : names) (void)remove_tree_at(fd, name);
  ::close(fd);
  ::rmdir(arrays.c_str());  // when empty: no other arun's files are there
}

}  // namespace

void slurm_executor::release(std::string_view instance) noexcept {
  try {
    auto& collected = memory_->collected;
    std::vector<std::string> dirs;
    for (auto it = collected.lower_bound(instance); it != collected.end() && it->first.starts_with(instance);) {
      if (!key_in_instance(it->first, instance)) {
        ++it;
        continue;
      }
      dirs.push_back(std::move(it->second));
      it = collected.erase(it);
    }
    if (dirs.empty() || !options_.after_journal) return;
    options_.after_journal([dirs = std::move(dirs)] {
      for (const auto& dir : dirs)
        if (auto problem = remove_slurm_job_directory(dir); !problem.empty()) arun_log().warn("{}", problem);
    });
  } catch (...) {
    // Out of memory: the directories stay until `arun sessions clean`.
  }
}

void slurm_executor::release_all() noexcept {
  try {
    std::vector<std::string> dirs;
    for (auto& [key, dir] : memory_->collected) dirs.push_back(std::move(dir));
    memory_->collected.clear();
    auto remove = [dirs = std::move(dirs), session = options_.jobs_dir,
                   tag = memory_->submitter.process_tag()] {
      for (const auto& dir : dirs)
        if (auto problem = remove_slurm_job_directory(dir); !problem.empty()) arun_log().warn("{}", problem);
      remove_array_files(session + "/arrays", tag);
      ::rmdir(session.c_str());  // when nothing is left in it
    };
    if (options_.after_journal)
      options_.after_journal(std::move(remove));
    else
      remove();
  } catch (...) {
    // Out of memory: the directories stay until `arun sessions clean`.
  }
}

std::vector<std::pair<std::string, std::string>> slurm_executor::waiting() const {
  return {memory_->waiting.begin(), memory_->waiting.end()};
}

void slurm_executor::emergency_stop() noexcept {
  // The event loop is not running any more: plain blocking children, bounded in time.
  try {
    const std::string name = "--name=arun-" + options_.session_id;
    for (const char* signal : {"--signal=KILL", ""}) {
      std::vector<std::string> argv = {"scancel", "--full"};
      if (*signal) argv.emplace_back(signal);
      argv.push_back(name);
      run_blocking(argv, options_.client_env, std::chrono::seconds(5));
    }
    // A resume runs the cancelled jobs anew at once instead of following them until lost.
    const auto marker = slurm_emergency_stop_marker(options_.jobs_dir);
    if (const int fd = options_.jobs_dir.empty() ? -1 : ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600); fd >= 0) {
      ::futimens(fd, nullptr);
      ::close(fd);
    }
  } catch (...) {
    // Out of memory while arun stops anyway: Slurm's --time limit ends the jobs.
  }
}

}  // namespace arun::io
