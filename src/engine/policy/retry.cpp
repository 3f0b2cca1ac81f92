#include "policy/retry.hpp"

#include "ascii.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <variant>

namespace arun::engine {

namespace {

bool matches(const retry_on_entry& entry, const attempt_failure& f) {
  if (const auto* code = std::get_if<int>(&entry))
    // A killed-on-timeout child's exit status (bash's 143) is an artefact of the kill:
    // only `timeout` asks for timed-out attempts to be retried.
    return !f.timed_out && f.exit_code == *code;
  switch (std::get<retry_trigger>(entry)) {
    case retry_trigger::failure: return !f.timed_out;
    case retry_trigger::timeout: return f.timed_out;
    case retry_trigger::rate_limit: return f.rate_limited;
  }
  return false;
}

// Settings come from recipe files: treat NaN and negatives as "nothing" rather than let
// them poison the arithmetic below.
double non_negative(double x) { return x > 0 ? x : 0.0; }

double undelayed_seconds(const retry_policy& p, int attempt) {
  const double initial = non_negative(p.initial_delay);
  switch (p.backoff) {
    case backoff_kind::exponential:
      // ldexp and pow overflow to +inf (never UB) for huge attempts; 0 × m^n stays 0.
      if (p.multiplier == 2.0) return std::ldexp(initial, std::min(attempt - 1, 4096));
      return initial * std::pow(std::max(p.multiplier, 1.0), std::min(attempt - 1, 4096));
    case backoff_kind::linear: return initial * attempt;
    case backoff_kind::constant: return initial;
  }
  return initial;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Position of the first case-insensitive occurrence of `needle` (lower case) at or after
// `from`, or npos.
std::size_t find_nocase(std::string_view hay, std::string_view needle, std::size_t from = 0) {
  if (from > hay.size()) return std::string_view::npos;
  const auto it = std::search(hay.begin() + static_cast<std::ptrdiff_t>(from), hay.end(), needle.begin(),
                              needle.end(), [](char a, char b) { return lower(a) == b; });
  return it == hay.end() ? std::string_view::npos : static_cast<std::size_t>(it - hay.begin());
}

bool is_letter(char c) { return lower(c) >= 'a' && lower(c) <= 'z'; }

// `rate limit` as words: not the end of "accurate limits".
bool has_rate_limit_phrase(std::string_view text) {
  for (auto at = find_nocase(text, "rate"); at != std::string_view::npos; at = find_nocase(text, "rate", at + 1)) {
    if (at > 0 && is_letter(text[at - 1])) continue;
    const auto rest = text.substr(at + 4);
    if (rest.size() >= 6 && (rest[0] == ' ' || rest[0] == '-' || rest[0] == '_') &&
        find_nocase(rest.substr(1, 5), "limit") == 0)
      return true;
  }
  return false;
}

// `429` as a status code, not the middle of "14291" or a port number.
bool has_status_429(std::string_view text) {
  for (auto at = text.find("429"); at != std::string_view::npos; at = text.find("429", at + 1)) {
    const bool digit_before = at > 0 && is_ascii_digit(text[at - 1]);
    const bool digit_after = at + 3 < text.size() && is_ascii_digit(text[at + 3]);
    if (!digit_before && !digit_after) return true;
  }
  return false;
}

}  // namespace

bool should_retry(const retry_policy& p, const attempt_failure& f, int attempt) {
  if (f.cancelled) return false;
  if (std::max(attempt, 1) >= p.max_attempts) return false;
  return std::any_of(p.on.begin(), p.on.end(), [&](const retry_on_entry& e) { return matches(e, f); });
}

std::chrono::nanoseconds retry_delay(const retry_policy& p, int attempt, double unit_random) {
  // Nanoseconds saturate past about 292 years anyway; a finite ceiling keeps an infinite
  // delay or cap from turning the jitter arithmetic into inf × 0 = NaN.
  constexpr double longest = 1e10;
  double d = std::min({undelayed_seconds(p, std::max(attempt, 1)), non_negative(p.max_delay), longest});
  const double jitter = std::min(non_negative(p.jitter), 1.0);
  if (jitter > 0) {
    const double u = std::clamp(non_negative(unit_random), 0.0, 1.0);
    const double low = d * (1.0 - jitter);
    d = low + (d - low) * u;
  }
  return to_nanoseconds(d);
}

std::chrono::nanoseconds to_nanoseconds(double seconds) noexcept {
  using rep = std::chrono::nanoseconds::rep;
  static_assert(std::is_same_v<rep, std::int64_t>);
  if (!(seconds > 0)) return std::chrono::nanoseconds::zero();
  const double ns = std::round(seconds * 1e9);
  // 2^63 is exactly representable; every double below it fits in int64_t.
  if (ns >= 0x1p63) return std::chrono::nanoseconds::max();
  return std::chrono::nanoseconds(static_cast<rep>(ns));
}

bool looks_rate_limited(std::string_view output) {
  return has_rate_limit_phrase(output) || find_nocase(output, "too many requests") != std::string_view::npos ||
         has_status_429(output);
}

retry_policy rate_limit_retry_policy(int retries, double initial_delay, double max_delay, double multiplier) {
  retry_policy p;
  p.max_attempts = retries < std::numeric_limits<int>::max() ? std::max(retries, 0) + 1 : retries;
  p.backoff = backoff_kind::exponential;
  p.initial_delay = initial_delay;
  p.max_delay = max_delay;
  p.multiplier = multiplier;
  p.jitter = 0.0;
  p.on = {retry_trigger::rate_limit};
  return p;
}

}  // namespace arun::engine
