#pragma once
// docs/reference/recipe.md, "retry": whether a failed attempt is tried again, and how long to wait
// before it. Pure functions: the coroutine that runs a step owns the timer and the random source.

#include <arun/recipe.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace arun::engine {

/// How one attempt failed, as far as `retry.on` cares.
struct attempt_failure {
  bool timed_out = false;
  bool rate_limited = false;     ///< agent output matched a rate-limit message
  bool cancelled = false;        ///< never retried
  std::optional<int> exit_code;  ///< the child exited normally with this code
};

/// Whether another attempt follows attempt number `attempt` (1-based) that failed as `f`.
/// False once `attempt` reaches `p.max_attempts` (total attempts, the first included) and
/// always for a cancelled attempt. Otherwise true when an entry of `p.on` matches:
/// `failure` any failure but a timeout (rate limits and failures without an exit code
/// included), `timeout` a timed-out attempt, `rate_limit` a rate-limited one, an integer
/// that exit code of an attempt that did not time out.
bool should_retry(const retry_policy& p, const attempt_failure& f, int attempt);

/// The wait after attempt `attempt` (1-based) failed, before the next. `unit_random` in
/// [0,1) drives jitter (values outside [0,1] are clamped). Exponential: initial ×
/// multiplier^(attempt-1) (multiplier 2 unless rate_limiting.backoff says otherwise), linear:
/// initial × attempt, constant: initial; capped at `p.max_delay`; jitter j then draws uniformly from [d·(1−j), d) (j = 1: full jitter). Never negative; NaN or negative
/// settings count as 0, attempts below 1 as 1, and any overflow saturates at the cap.
std::chrono::nanoseconds retry_delay(const retry_policy& p, int attempt, double unit_random);

/// Seconds as nanoseconds, rounded to the nearest: NaN and negatives are 0, anything past
/// the range (about 292 years) is `nanoseconds::max()`. Never undefined behaviour, unlike
/// a `duration_cast` from a huge `duration<double>`.
std::chrono::nanoseconds to_nanoseconds(double seconds) noexcept;

/// docs/agents.md, "Output, JSON and flaky agents": whether a failed agent reply reads as a rate
/// limit. Case-insensitive: `rate limit` starting a word (also `rate-limit`, `rate_limit`; this
/// covers `hit your rate limit`),
/// `too many requests`, or `429` not inside a longer number.
bool looks_rate_limited(std::string_view output);

/// docs/agents.md, "Output, JSON and flaky agents": the retries of an agent's rate limit when the
/// step has no `retry` block: `retries` more attempts, exponential from `initial_delay` seconds,
/// capped at `max_delay`, on `rate_limit` only. The defaults are the manual's (docs/agents.md,
/// "Output, JSON and flaky agents"; `--rate-limit-retries` etc. override).
retry_policy rate_limit_retry_policy(int retries = 5, double initial_delay = 60.0, double max_delay = 600.0,
                                     double multiplier = 2.0);

}  // namespace arun::engine
