#pragma once
// Bounded capture of one output stream: the first N bytes, a rolling tail for failure
// snippets, and line splitting for listeners. Memory stays bounded whatever a child writes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace arun::io {

struct capture_limits {
  std::size_t max_bytes = 10u << 20;      ///< stored bytes per stream (SPEC §3.3)
  std::size_t tail_lines = 20;            ///< failure snippet lines
  std::size_t tail_bytes = 8u << 10;      ///< failure snippet bytes
  std::size_t max_line_bytes = 64u << 10; ///< longer lines reach listeners cut (SPEC §9)
};

/// What was kept of one stream.
struct captured_output {
  std::string text;          ///< the first `max_bytes` bytes
  bool truncated = false;    ///< more than `max_bytes` arrived
  std::string tail;          ///< the last `tail_lines` lines within `tail_bytes`
  std::uint64_t total_bytes = 0;
};

/// Receives each complete line (newline removed); `cut` means the line was longer than
/// `max_line_bytes` and only its beginning is given.
using line_sink = std::function<void(std::string_view line, bool cut)>;

class output_capture {
public:
  explicit output_capture(capture_limits limits = {}, line_sink on_line = {});

  /// Adds bytes as they arrive from the pipe.
  void append(std::string_view chunk);
  /// Counts `bytes` that were never read (a job's output file beyond what is kept): the
  /// capture is truncated, the tail starts after the gap, and the line the gap cut is not
  /// delivered.
  void skip(std::uint64_t bytes);
  /// Delivers a partial last line, if any. Call once at end of stream.
  void finish();
  /// Stops delivering lines (after the sink failed); capture goes on.
  void drop_line_sink() noexcept { on_line_ = nullptr; }
  /// The kept output; leaves the capture empty.
  captured_output take();

  std::uint64_t total_bytes() const noexcept { return total_bytes_; }

private:
  void split_lines(std::string_view chunk);
  void keep_tail(std::string_view chunk);

  capture_limits limits_;
  line_sink on_line_;
  std::string head_;
  bool truncated_ = false;
  std::string tail_;        // up to 2 * tail_bytes, trimmed lazily
  std::string partial_;     // the current unfinished line, at most max_line_bytes
  bool discarding_ = false; // inside an over-long line whose beginning was delivered
  std::uint64_t total_bytes_ = 0;
};

/// The last `max_lines` lines of `text` (a trailing newline does not start a line).
std::string_view last_lines(std::string_view text, std::size_t max_lines) noexcept;

}  // namespace arun::io
