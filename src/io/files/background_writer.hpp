#pragma once
// File writes off the event loop. A write(2) or fsync(2) to a filesystem that stalls (frozen,
// a hung NFS server, a device in error recovery) blocks its thread for as long as the stall
// lasts; on the event-loop thread that would hold back every timeout and kill of every
// running step. The session journal, its snapshots and the event files therefore hand their
// writes to one thread of their own, which runs them in the order they were queued.
//
// The queue is bounded by bytes: past the bound the producer waits for room, the only case
// in which the event loop waits for the disk. The bound (64 MiB by default) is far beyond what
// a healthy disk ever queues, so only a stall that lasts while that much output is produced
// reaches it.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace arun::io {

class background_writer {
public:
  static constexpr std::size_t default_max_queued_bytes = 64 * 1024 * 1024;

  explicit background_writer(std::size_t max_queued_bytes = default_max_queued_bytes);
  /// Runs every job still queued, then stops the thread.
  ~background_writer();
  background_writer(const background_writer&) = delete;
  background_writer& operator=(const background_writer&) = delete;

  /// Queues `job` (it must not throw) to run on the writer thread after every job queued
  /// before it. `bytes` (what it will write) counts against the bound; past the bound this
  /// waits until enough of the queue has been written. A job larger than the bound waits
  /// for an empty queue.
  void post(std::size_t bytes, std::function<void()> job);

  /// Waits until every job queued before this call has run.
  void drain();
  /// The same, for at most `limit`: false when some are still queued.
  bool drain_for(std::chrono::milliseconds limit);

  /// Bytes queued and not yet written.
  std::size_t queued_bytes() const;

  /// Test seam: the thread stops before its next job, as on a frozen filesystem, until
  /// `resume`. Jobs keep being queued meanwhile.
  void pause();
  void resume();

private:
  struct queued_job {
    std::size_t bytes;
    std::function<void()> run;
  };
  void run();

  const std::size_t max_bytes_;
  bool idle_ = false;             // the thread waits for work: a post must wake it
  std::size_t drain_waiters_ = 0;  // a drain cuts the gathering of a batch short
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;  // writer thread: a job, a resume or the end
  std::condition_variable room_;        // producers: bytes written, or a job finished
  std::deque<queued_job> jobs_;
  std::size_t queued_bytes_ = 0;
  std::size_t posted_ = 0, finished_ = 0;  // jobs, for drain
  bool paused_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace arun::io
