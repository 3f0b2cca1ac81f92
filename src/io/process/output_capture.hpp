#pragma once
// Bounded capture of one output stream: the first N bytes, a rolling tail for failure
// snippets, and line splitting for listeners. Memory stays bounded whatever a child writes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace arun::io {

class secret_masker;

struct capture_limits {
  std::size_t max_bytes = 10u << 20;      ///< stored bytes per stream (docs/reference/recipe.md, "Limits")
  std::size_t tail_lines = 20;            ///< failure snippet lines
  std::size_t tail_bytes = 8u << 10;      ///< failure snippet bytes
  std::size_t max_line_bytes = 64u << 10; ///< longer lines reach listeners cut (docs/running.md, "Events")
  /// With secrets, no cut (of the text, of a line, at the tail's start) keeps part of one: the
  /// capture sees the longest secret's length past each cut and moves the cut off a secret
  /// that straddles it (docs/watching.md#secrets). Must outlive the capture.
  const secret_masker* secrets = nullptr;
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
  void deliver_cut_line();
  std::size_t hold() const noexcept;  // bytes kept past a cut: the longest secret's
  void keep_tail(std::string_view chunk);

  capture_limits limits_;
  line_sink on_line_;
  std::string head_;
  bool truncated_ = false;
  std::string tail_;        // up to 2 * tail_bytes, trimmed lazily
  std::string partial_;     // the current unfinished line, at most max_line_bytes + hold()
  bool discarding_ = false; // inside an over-long line whose beginning was delivered
  std::uint64_t total_bytes_ = 0;
};

/// `text` cut at `at` bytes, moved back off a secret of `secrets` (may be null) straddling it.
std::string_view cut_text(std::string_view text, std::size_t at, const secret_masker* secrets) noexcept;

/// The last `max_lines` lines of `text` (a trailing newline does not start a line).
std::string_view last_lines(std::string_view text, std::size_t max_lines) noexcept;

}  // namespace arun::io
