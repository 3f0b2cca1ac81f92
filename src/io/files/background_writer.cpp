#include "files/background_writer.hpp"

#include <signal.h>

#include <algorithm>

namespace arun::io {

background_writer::background_writer(std::size_t max_queued_bytes) : max_bytes_(max_queued_bytes) {
  // Signals are the event loop's business (asio::signal_set): the writer thread blocks them
  // all, so that none is delivered to a thread that may sit in write(2) for minutes.
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  thread_ = std::thread([this] { run(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

background_writer::~background_writer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    paused_ = false;
  }
  work_ready_.notify_all();
  thread_.join();
}

void background_writer::post(std::size_t bytes, std::function<void()> job) {
  std::unique_lock lock(mutex_);
  room_.wait(lock, [&] { return queued_bytes_ == 0 || queued_bytes_ + bytes <= max_bytes_; });
  jobs_.push_back({bytes, std::move(job)});
  queued_bytes_ += bytes;
  ++posted_;
  const bool wake = idle_;
  idle_ = false;
  lock.unlock();
  if (wake) work_ready_.notify_one();
}

void background_writer::drain() {
  std::unique_lock lock(mutex_);
  const auto target = posted_;
  ++drain_waiters_;
  work_ready_.notify_one();
  room_.wait(lock, [&] { return finished_ >= target; });
  --drain_waiters_;
}

bool background_writer::drain_for(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  const auto target = posted_;
  ++drain_waiters_;
  work_ready_.notify_one();
  const bool done = room_.wait_for(lock, limit, [&] { return finished_ >= target; });
  --drain_waiters_;
  return done;
}

std::size_t background_writer::queued_bytes() const {
  std::lock_guard lock(mutex_);
  return queued_bytes_;
}

void background_writer::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
}

void background_writer::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  work_ready_.notify_all();
}

void background_writer::run() {
  // Woken by the first job after a pause, the thread lets a batch gather for a moment: a
  // fan-out posts a journal record and two event lines per step, and one wake-up for each
  // would cost the event loop's thread more than the writes do.
  constexpr auto gather = std::chrono::milliseconds(5);
  constexpr std::size_t batch_bytes = 256 * 1024;
  std::unique_lock lock(mutex_);
  for (;;) {
    idle_ = true;
    work_ready_.wait(lock, [&] { return (!jobs_.empty() || stopping_) && !paused_; });
    idle_ = false;
    if (jobs_.empty()) return;  // stopping, and everything is written
    work_ready_.wait_for(lock, gather, [&] {
      return stopping_ || paused_ || drain_waiters_ > 0 || queued_bytes_ >= std::min(batch_bytes, max_bytes_);
    });
    while (!jobs_.empty() && !paused_) {
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job.run();
      job.run = nullptr;  // what it captured goes before the next job
      lock.lock();
      queued_bytes_ -= job.bytes;
      ++finished_;
      room_.notify_all();
    }
  }
}

}  // namespace arun::io
