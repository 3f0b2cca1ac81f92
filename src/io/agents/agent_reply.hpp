#pragma once
// What an agent CLI's machine-readable stdout says: the reply text, the tokens and cost the
// CLI reports, and whether it reports a failure (claude's `--output-format json` result
// object, `codex exec --json` events). Pure: the step runner hands in the captured stdout.

#include "agents/agent_cli.hpp"

#include <arun/events.hpp>
#include <arun/results.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// What a decoder knows of the call besides its stdout.
struct reply_context {
  std::string cli = "claude";  ///< the CLI, for messages (agent_cli.hpp describe())
  std::string model;           ///< the model arun asked for; empty: the CLI's default
  bool cut = false;            ///< stdout exceeded the capture bound: only its beginning is here
};

/// A decoded reply. When the output is not in the expected format, `text` is the output as it
/// was, `usage` is none and `warning` says why.
struct agent_reply {
  std::string text;                  ///< the reply (claude's `result`, codex's last agent message)
  std::optional<agent_usage> usage;  ///< none: not reported; `provider` is left empty
  /// The CLI reported that the call failed (claude's is_error, codex's turn.failed); `error`
  /// says why.
  bool failed = false;
  /// What the CLI reported as errors (claude's failed result text, codex's error and
  /// turn.failed messages, distinct ones joined with "; "). Codex may report errors it
  /// recovered from: they count only when the call failed.
  std::string error;
  /// An error above reads as a rate limit (HTTP 429, Too Many Requests, rate_limit_error).
  bool rate_limited = false;
  std::string warning;  ///< empty: the output was read as the format
  bool raw = false;     ///< the output could not be read: `text` is it as it was
};

/// Decodes one call's stdout in `format`; `text` format returns the output as it is.
agent_reply decode_reply(reply_format format, std::string_view output, const reply_context& context);

/// claude's `--output-format json`: the last line that is an object of "type":"result" (the
/// whole output when it is one object, or an array of messages as `--verbose` prints).
agent_reply decode_claude_json(std::string_view output, const reply_context& context);

/// `codex exec --json` events, one a line; lines that are not JSON objects are skipped.
agent_reply decode_codex_jsonl(std::string_view output, const reply_context& context);

/// Whether an error message a CLI reported reads as a rate limit: an HTTP 429, "Too Many
/// Requests", "rate_limit_error" or "rate limit" (any case).
bool reads_as_rate_limit(std::string_view message);

/// A line to show for a step's output as it arrives.
struct shown_line {
  output_stream stream = output_stream::out;
  std::string text;
  bool cut = false;  ///< only the beginning of a longer line
};

/// Turns the raw stdout lines of a JSON-speaking CLI into the lines a reader should see while
/// the call runs: codex's agent messages (stdout) and error messages (stderr) as they arrive,
/// other events swallowed, lines that are not JSON shown as they are; claude's whole stdout is
/// swallowed (its reply arrives in one object at the end: show the decoded reply then).
class reply_line_filter {
public:
  explicit reply_line_filter(reply_format format) : format_(format) {}

  /// The lines to show for one raw stdout line (`cut`: only its beginning arrived).
  std::vector<shown_line> on_stdout_line(std::string_view line, bool cut);

  /// Whether the reply should be shown once the call ends: claude's always (nothing of it was
  /// shown), codex's when an event could not be read (a line cut at the line bound).
  bool show_reply_at_end() const noexcept { return format_ == reply_format::claude_json || missed_; }

private:
  reply_format format_;
  bool missed_ = false;
  std::string last_error_;  // the last error message shown
};

/// `text`'s lines (a final newline does not start a line), for showing.
std::vector<std::string_view> split_lines(std::string_view text);

}  // namespace arun::io
