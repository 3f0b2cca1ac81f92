#pragma once
// Every step instance's output, kept in its session: `logs/<instance-id>.out` and `.err`
// (a hook's in `<instance-id>@hooks.out|.err`), one line per line the child printed. Iteration
// ids nest as directories (`logs/fan[3]/review.err`), so a glob over ids maps onto the tree.
//
// A log is bounded by `max_bytes`: when the next line would pass it, the file becomes
// `NAME.1` (replacing an older one) and a new file starts, so the newest output is always kept
// and a stream never takes more than twice the bound. Writes go through the session's
// background_writer: a stalled disk never stalls the run. Lines are buffered per file and
// handed over when 16 KiB gather, when the instance ends, and on `flush()` (the run calls it a
// few times a second), so `arun logs -f` sees a running step's output promptly.

#include "files/background_writer.hpp"
#include "output/secret_masker.hpp"

#include <arun/events.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace arun::io {

/// What one file under `logs/` holds.
struct instance_log_name {
  std::string instance;  ///< the instance id
  output_stream stream = output_stream::out;
  bool hooks = false;    ///< the output of the instance's hooks
  bool rotated = false;  ///< the `.1` file: the output before the current file's
};

/// The path of a log below `logs/`: `fan[3]/review.err`. Bytes outside the id alphabet, `%`,
/// and `.`/`..` components are percent-encoded, so every id maps to its own file in the tree.
std::string instance_log_path(std::string_view instance, output_stream stream, bool hooks = false);
/// The reverse of instance_log_path, with `.1` for rotated files; nullopt for another file.
std::optional<instance_log_name> parse_instance_log_path(std::string_view relative);

class instance_logs final : public event_listener {
public:
  /// `dir`: the session's `logs` directory, made (0700) when the first line arrives.
  /// `fresh`: the session is new, so no file of an earlier run is there to replace.
  instance_logs(std::string dir, std::uint64_t max_bytes, std::shared_ptr<background_writer> writer,
                line_filter filter = nullptr, bool fresh = false);
  /// Hands every buffered line to the writer and has the files closed after them.
  ~instance_logs() override;
  instance_logs(const instance_logs&) = delete;
  instance_logs& operator=(const instance_logs&) = delete;

  void on_event(const event& e) noexcept override;
  /// Hands the buffered lines of every open log to the writer.
  void flush() noexcept;

  /// The log files (absolute paths, stderr first) that hold output of `instance`, hooks left
  /// out: what a failure line names.
  std::vector<std::string> files_of(std::string_view instance) const;
  /// The first error writing a log ("cannot write log 'PATH': REASON"); empty if none.
  std::string error() const;

  const std::string& dir() const noexcept { return dir_; }

private:
  struct log_file;  // the writer thread's side: descriptor, size, path
  struct open_log {
    std::shared_ptr<log_file> file;
    std::string pending;  // lines not yet handed to the writer
  };
  void add_line(const event& e);
  void hand_over(open_log& log);
  void close_instance(const std::string& instance);
  void record_error(std::string why);

  std::string dir_;
  std::uint64_t max_bytes_;
  std::shared_ptr<background_writer> writer_;
  line_filter filter_;
  bool fresh_;
  // Directories under `dir` made so far: only the writer's jobs touch it, so a fan-out does
  // not look each one up again per instance.
  std::shared_ptr<std::unordered_set<std::string>> made_dirs_ = std::make_shared<std::unordered_set<std::string>>();
  std::unordered_map<std::string, open_log> open_;  // by relative path
  std::unordered_map<std::string, std::vector<std::string>> open_by_instance_;  // instance -> relative paths
  std::unordered_set<std::string> started_;  // relative paths opened in this run
  std::unordered_map<std::string, std::uint8_t> written_;  // instance -> 1: stdout, 2: stderr
  std::shared_ptr<std::mutex> error_mutex_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::string> error_ = std::make_shared<std::string>();
};

}  // namespace arun::io
