#pragma once
/// Run events (docs/reference/formats.md, "Events"). The engine never logs: it emits events, and
/// listeners (progress on stderr, JSONL files, an embedding host) decide what to show.

#include <arun/results.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace arun {

enum class event_kind {
  recipe_start,
  step_start,
  step_output,
  step_heartbeat,
  step_retry,
  step_end,
  approval_requested,
  recipe_end,
  /// e.g. a reference without a value rendered empty (docs/reference/templates.md,
  /// "Undefined references"); see `message`
  warning,
  /// A limit group's effective limit adapted (halved after a rate limit, grown back by a
  /// clean completion); see `group` and `message` (why).
  limit_changed,
};

enum class output_stream { out, err };

std::string_view to_string(event_kind k) noexcept;
std::string_view to_string(output_stream s) noexcept;

/// One event. Fields that do not apply to the kind stay empty.
struct event {
  event_kind kind = event_kind::recipe_start;
  std::chrono::system_clock::time_point ts = std::chrono::system_clock::now();
  std::string session_id;
  std::string recipe_name;  ///< recipe_start / recipe_end
  std::string step;         ///< instance id (docs/reference/formats.md, "Conventions"), for step events
  std::string step_type;    ///< "bash", "agent", "recipe", "loop", "gate", "hook"
  const step_result* result = nullptr;  ///< step_end: the finished instance
  const run_result* run = nullptr;      ///< recipe_end: the finished run
  output_stream stream = output_stream::out;  ///< step_output
  std::string_view line;                      ///< step_output, without the newline
  bool line_truncated = false;                ///< step_output: line was cut at 64 KiB
  std::string message;  ///< warning; step_retry: why the attempt failed; approval_requested: the prompt
  int attempt = 0;      ///< step_start / step_retry: the attempt that starts or failed (1-based)
  std::chrono::nanoseconds elapsed{};  ///< step_heartbeat: how long the instance has run
  std::chrono::nanoseconds delay{};    ///< step_retry: the wait before the next attempt
  /// step_start of a foreach step: its number of items; recipe_start: the recipe's number of
  /// top-level steps (those of its stages included)
  std::optional<std::size_t> items;
  /// The limit group (an agent provider or a step's `limit_group`) of a leaf's step_start, and
  /// of limit_changed: its children running (this one included) and its effective limit (0:
  /// none of its own); empty name: none.
  struct group_state {
    std::string name;
    int running = 0;
    int limit = 0;
    std::optional<int> configured;  ///< limit_changed: the limit it grows back to
  } group;
  /// What the run's agent calls have spent so far (on a resume, the session's earlier runs
  /// included) and the run's budget: on every event once a budget is set or a call has spent
  /// (the status line shows it against the budget, docs/agents.md).
  struct spend_state {
    double cost_usd = 0;         ///< of the calls whose cost is known
    bool cost_known = false;     ///< some call's cost is known
    std::uint64_t tokens = 0;    ///< input, output and cache tokens
    std::optional<double> budget_usd;
    std::optional<std::uint64_t> budget_tokens;
  };
  std::optional<spend_state> spend;
};

/// Receives events synchronously on the engine's thread. Must not throw.
class event_listener {
public:
  virtual ~event_listener() = default;
  virtual void on_event(const event& e) noexcept = 0;
};

}  // namespace arun
