#pragma once
// Run events as JSON objects (docs/reference/formats.md, "Events"): the shape of every line of
// `--events` and audit files.

#include <arun/events.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// `2026-11-21T13:45:01.123Z`: RFC 3339, UTC, millisecond precision (truncated, not rounded).
std::string format_rfc3339_ms(std::chrono::system_clock::time_point t);

/// The time format_rfc3339_ms wrote (`YYYY-MM-DDTHH:MM:SS[.fff]Z`); nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339_ms(std::string_view text);

/// `text` with every invalid UTF-8 sequence replaced by U+FFFD, so JSON readers that insist on
/// valid UTF-8 (Python, jq) accept lines of binary child output. Valid text is returned as is.
std::string sanitize_utf8(std::string_view text);

/// The object of one event (docs/reference/formats.md, "Events"). Always `ts`, `event` (the kind's
/// name) and `session_id`; the other keys depend on the kind:
/// - recipe_start: `recipe`; recipe_end: `recipe`, `status`, `success`, `duration` (seconds),
///   `error` (null when empty), taken from `e.run` when it is set.
/// - every step event (and a warning that names a step): `step` and `step_id` (both the
///   instance id), `type`.
/// - step_start: `attempt` when > 0, `items` when set, `limit: {group, running, limit}` for a
///   child in a limit group.
/// - limit_changed: `group`, `running`, `limit`, `configured` (null when none), `reason`.
/// - step_output: `stream` ("stdout" | "stderr"), `line`, `truncated`.
/// - step_heartbeat: `elapsed`; step_retry: `attempt`, `delay`, `error` (the message).
/// - step_end (from `e.result` when set): `status`, `duration`, `attempt` (the attempts made),
///   `exit_code`, `signal`, `timed_out`, `error` (null when absent), and
///   `iterations: {total, completed, failed, skipped}` for loop steps.
/// - approval_requested: `prompt`; warning: `message`.
/// Durations are seconds as doubles; text is made valid UTF-8. Serialize with
/// arun::to_compact_json (Boost.JSON's own serializer prints 1.0 as `1E0`). Throws only
/// std::bad_alloc.
boost::json::object event_to_json(const event& e);

}  // namespace arun::io
