#pragma once
// What `arun report` shows of a session (docs/report-and-dashboard.md): one JSON document
// built from the session's files as they stand — state.json, the journal, the events, the
// transcripts and the logs' tails — for a run that is going, waiting, failed or done. The
// HTML report embeds the same document.
//
// A session can hold a million instances: every file is read as a stream, each instance is
// kept as a few numbers, and what the document lists (failures, timeline bars, transcripts,
// retries) is bounded, with totals beside it; it never grows with the run beyond its
// per-step aggregates.

#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <variant>

namespace arun::io {

/// How much of each list the document holds (the rest is counted, never dropped silently).
struct report_limits {
  std::size_t failures = 100;          ///< failed instances listed with their excerpt and log tail
  std::size_t bars = 600;              ///< timeline bars of instances (failures and the longest first)
  std::size_t bins = 240;              ///< time bins of the concurrency and spend charts
  std::size_t transcripts = 60;        ///< agent calls listed with their prompt and reply
  std::size_t transcript_bytes = 4096; ///< of each prompt, system prompt and reply shown
  std::size_t log_tail_bytes = 4096;   ///< of each failed instance's log
  std::size_t retries = 100;           ///< retry events listed (every retry is counted by reason)
  std::size_t listed = 200;            ///< worktrees, cache hits, warnings and limit changes listed
};

/// The report of session `id` in `root` (a session root, as `sessions show` resolves it), as
/// of `now`; or why it cannot be read. The document's keys: docs/report-and-dashboard.md and
/// schema/report.schema.json.
std::variant<boost::json::object, std::string> session_report(const std::string& root, const std::string& id,
                                                               std::chrono::system_clock::time_point now,
                                                               const report_limits& limits = {});

}  // namespace arun::io
