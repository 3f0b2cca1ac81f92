#pragma once
// The jobs of one run on Slurm, followed together: one `squeue --name=arun-<session>` per
// poll lists them all, and each job's follower waits on its own timer, which every listing
// cancels (and a cancel request too).

#include "executor/slurm_clients.hpp"
#include "executor/slurm_executor.hpp"
#include "output/arun_log.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>

namespace arun::io {

// One job being followed: what the queue and the caller's cancellation share with it.
struct followed_job {
  explicit followed_job(boost::asio::any_io_executor ex) : wake(ex) { wake.expires_at(std::chrono::steady_clock::time_point::max()); }
  std::string id;
  bool cancel_requested = false;
  boost::asio::steady_timer wake;  ///< cancelled to wake the follower: a new listing, or a cancel request
};

// Every job of the run, listed by one `squeue --name=arun-<session>` per poll; the
// followers wait on their own timers, which each listing cancels.
class slurm_queue : public std::enable_shared_from_this<slurm_queue> {
public:
  slurm_queue(boost::asio::any_io_executor ex, const slurm_options& options) : ex_(ex), options_(options), tick_(ex) {}

  void follow(followed_job& job) {
    followers_.insert(&job);
    interval_ = options_.min_poll;  // a new job: look soon
    tick_.cancel();
    if (!polling_) {
      polling_ = true;
      boost::asio::co_spawn(ex_, poll_loop(shared_from_this()), boost::asio::detached);
    }
  }
  void forget(followed_job& job) noexcept {
    followers_.erase(&job);
    if (followers_.empty()) tick_.cancel();  // the loop ends now, not at its next tick
  }

  /// The state the last listing gave the job: empty when it was not listed.
  std::string state_of(const std::string& id) const {
    const auto it = listing_.find(id);
    return it == listing_.end() ? std::string() : it->second.state;
  }
  /// Why Slurm has not started the job, as the last listing said ("Resources", "Licenses",
  /// "PartitionTimeLimit"...); "None" or empty otherwise.
  std::string reason_of(const std::string& id) const {
    const auto it = listing_.find(id);
    return it == listing_.end() ? std::string() : it->second.reason;
  }
  bool listed_ok() const noexcept { return listed_ok_; }
  std::uint64_t polls() const noexcept { return polls_; }

private:
  static boost::asio::awaitable<void> poll_loop(std::shared_ptr<slurm_queue> self) {
    while (!self->followers_.empty()) {
      co_await self->list();
      for (auto* job : self->followers_) job->wake.cancel();
      const auto listed = std::chrono::steady_clock::now();
      self->tick_.expires_at(listed + self->interval_);
      co_await self->tick_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      // A new job wakes the loop early, but never sooner than min_poll after the last listing.
      while (!self->followers_.empty() && std::chrono::steady_clock::now() < listed + self->options_.min_poll) {
        self->tick_.expires_at(listed + self->options_.min_poll);
        co_await self->tick_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      }
    }
    self->polling_ = false;
  }

  boost::asio::awaitable<void> list() {
    ++polls_;
    auto r = co_await squeue(options_.session_id, options_.client_env);
    if (!r.succeeded()) {
      // The controller may be restarting: keep the last listing, look again later. Said once
      // per outage, not at every poll.
      if (++failures_in_a_row_ == 1) arun_log().warn("squeue failed: {}; trying again", client_failure(r));
      listed_ok_ = false;
      interval_ = std::min(options_.max_poll, interval_ * 2);
      co_return;
    }
    std::map<std::string, listed_job> now;
    std::istringstream lines(r.out.text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string id;
      listed_job job;
      if (!(fields >> id >> job.state)) continue;
      std::getline(fields >> std::ws, job.reason);
      now[id] = std::move(job);
    }
    // Nothing changed: look less often, up to max_poll; a change: look again soon.
    interval_ = now == listing_ ? std::min(options_.max_poll, interval_ * 3 / 2) : options_.min_poll;
    listing_ = std::move(now);
    listed_ok_ = true;
    if (failures_in_a_row_ > 0) arun_log().info("squeue works again after {} failed calls", failures_in_a_row_);
    failures_in_a_row_ = 0;
  }

  boost::asio::any_io_executor ex_;
  const slurm_options& options_;
  boost::asio::steady_timer tick_;
  std::set<followed_job*> followers_;
  struct listed_job {
    std::string state, reason;
    bool operator==(const listed_job&) const = default;
  };
  std::map<std::string, listed_job> listing_;
  std::chrono::milliseconds interval_{250};
  bool polling_ = false;
  bool listed_ok_ = false;
  int failures_in_a_row_ = 0;
  std::uint64_t polls_ = 0;
};

}  // namespace arun::io
