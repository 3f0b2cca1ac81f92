#pragma once
// Events as JSON lines (docs/reference/formats.md, "Events"): `--events FILE` and
// `--audit-dir DIR`.

#include "files/background_writer.hpp"
#include "output/secret_masker.hpp"

#include <arun/events.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace arun::io {

class jsonl_event_sink;

/// How much step output an events file keeps per step instance: a step that prints 10 MB of
/// `yes` must not make an 830 MB events file. Past a limit the instance's further output
/// lines are left out, and one `warning` event before its `step_end` counts them.
struct event_output_limits {
  std::size_t max_lines = 1000;        ///< output events per instance
  std::size_t max_bytes = 256 * 1024;  ///< output bytes per instance
  std::size_t max_line_bytes = 4096;   ///< a longer line is cut there (`truncated: true`)
};

/// Either an open sink or why there is none.
struct jsonl_open_result {
  std::unique_ptr<jsonl_event_sink> sink;  ///< null when opening failed
  std::string error;                       ///< empty on success
};

/// Writes each event as one compact JSON object (event_to_json) and a newline, with a single
/// write(2) per line straight to the file (no user-space buffer), so a killed arun loses
/// nothing it already emitted and a reader never sees half a line from a healthy writer.
/// Given a background_writer, the write(2) runs on its thread (a stalled disk then never
/// stalls the caller); the line is still made at once, in the order of the events.
class jsonl_event_sink final : public event_listener {
public:
  /// Creates or truncates (`truncate`; else appends to) `path` (mode 0600, close-on-exec, append mode so two sinks on the
  /// same file interleave whole lines). On failure: "cannot open events file 'PATH': REASON".
  static jsonl_open_result open(const std::string& path, bool truncate = true, event_output_limits limits = {},
                                std::shared_ptr<background_writer> writer = nullptr);

  /// Creates `dir` (with parents) when missing, then opens audit_file_path(dir, ...) for
  /// appending (a resumed session continues the same file). On
  /// failure: "cannot create audit directory 'DIR': REASON" or the open() error.
  static jsonl_open_result open_audit(const std::string& dir, const std::string& recipe_name,
                                      const std::string& session_id, std::shared_ptr<background_writer> writer = nullptr);

  ~jsonl_event_sink() override;
  jsonl_event_sink(const jsonl_event_sink&) = delete;
  jsonl_event_sink& operator=(const jsonl_event_sink&) = delete;

  /// Never throws. After the first failed write the sink stops writing (a partial line
  /// followed by more lines would corrupt the file) and remembers the error.
  void on_event(const event& e) noexcept override;

  /// From now on every line has the secrets of `masker` masked (null: none).
  void mask_with(const secret_masker* masker) noexcept { masker_ = masker; }

  const std::string& path() const noexcept { return path_; }
  /// True once a write failed; nothing is written after that.
  bool failed() const noexcept { return failed_; }
  /// The first write error ("cannot write events file 'PATH': REASON"), empty if none, so the
  /// caller can warn once.
  std::string error() const;
  /// Lines written completely so far.
  std::size_t lines_written() const noexcept { return lines_; }

private:
  struct output_usage {
    std::size_t lines = 0, bytes = 0, omitted_lines = 0, omitted_bytes = 0;
  };

  jsonl_event_sink(int fd, std::string path, event_output_limits limits, std::shared_ptr<background_writer> writer)
      : fd_(fd), path_(std::move(path)), limits_(limits), writer_(std::move(writer)) {}
  void write_line(const std::string& line) noexcept;  ///< on the writer's thread, if any
  void fail(int err) noexcept;
  void write_event(const event& e) noexcept;
  /// The output event to write in place of `e` (its line cut), or none when over the limits.
  std::optional<event> bounded_output(const event& e);
  void report_omitted(const event& end);

  int fd_;
  std::string path_;
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mutex_;  // error_ may be set on the writer's thread
  std::string error_;
  std::atomic<std::size_t> lines_{0};
  event_output_limits limits_;
  std::shared_ptr<background_writer> writer_;
  const secret_masker* masker_ = nullptr;
  std::unordered_map<std::string, output_usage> output_;  ///< per running instance
};

/// `DIR/<recipe-name>-<session-id>.jsonl` (docs/reference/formats.md, "Events"). Characters of the
/// name and the id outside [A-Za-z0-9_.-] (e.g. `/`, spaces) and a leading `.` become `_`, so the
/// file always lands directly in DIR; an empty name becomes `recipe`. Pure: touches no file.
std::string audit_file_path(const std::string& dir, const std::string& recipe_name, const std::string& session_id);

}  // namespace arun::io
