#pragma once
// Events as JSON lines (SPEC §9): `--events FILE` and `--audit-dir DIR`.

#include <arun/events.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace arun::io {

class jsonl_event_sink;

/// Either an open sink or why there is none.
struct jsonl_open_result {
  std::unique_ptr<jsonl_event_sink> sink;  ///< null when opening failed
  std::string error;                       ///< empty on success
};

/// Writes each event as one compact JSON object (event_to_json) and a newline, with a single
/// write(2) per line straight to the file (no user-space buffer), so a killed arun loses
/// nothing it already emitted and a reader never sees half a line from a healthy writer.
class jsonl_event_sink final : public event_listener {
public:
  /// Creates or truncates (`truncate`; else appends to) `path` (mode 0644, close-on-exec, append mode so two sinks on the
  /// same file interleave whole lines). On failure: "cannot open events file 'PATH': REASON".
  static jsonl_open_result open(const std::string& path, bool truncate = true);

  /// Creates `dir` (with parents) when missing, then opens audit_file_path(dir, ...) for
  /// appending (a resumed session continues the same file). On
  /// failure: "cannot create audit directory 'DIR': REASON" or the open() error.
  static jsonl_open_result open_audit(const std::string& dir, const std::string& recipe_name,
                                      const std::string& session_id);

  ~jsonl_event_sink() override;
  jsonl_event_sink(const jsonl_event_sink&) = delete;
  jsonl_event_sink& operator=(const jsonl_event_sink&) = delete;

  /// Never throws. After the first failed write the sink stops writing (a partial line
  /// followed by more lines would corrupt the file) and remembers the error.
  void on_event(const event& e) noexcept override;

  const std::string& path() const noexcept { return path_; }
  /// True once a write failed; nothing is written after that.
  bool failed() const noexcept { return failed_; }
  /// The first write error ("cannot write events file 'PATH': REASON"), empty if none, so the
  /// caller can warn once.
  const std::string& error() const noexcept { return error_; }
  /// Lines written completely so far.
  std::size_t lines_written() const noexcept { return lines_; }

private:
  jsonl_event_sink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int write_all(const std::string& data) noexcept;  ///< 0 or an errno value
  void fail(int err) noexcept;

  int fd_;
  std::string path_;
  bool failed_ = false;
  std::string error_;
  std::size_t lines_ = 0;
};

/// `DIR/<recipe-name>-<session-id>.jsonl` (SPEC §9). Characters of the name and the id outside
/// [A-Za-z0-9_.-] (e.g. `/`, spaces) and a leading `.` become `_`, so the file always lands
/// directly in DIR; an empty name becomes `recipe`. Pure: touches no file.
std::string audit_file_path(const std::string& dir, const std::string& recipe_name, const std::string& session_id);

}  // namespace arun::io
