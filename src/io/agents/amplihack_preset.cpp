#include "agents/amplihack_preset.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace arun::io {

amplihack_settings read_amplihack_settings(const std::function<const char*(const char*)>& lookup) {
  amplihack_settings out;
  auto value = [&](const char* name) -> std::string {
    const char* v = lookup(name);
    return v ? std::string(v) : std::string();
  };
  if (auto v = value("AMPLIHACK_MAX_DEPTH"); !v.empty()) out.max_depth = v;
  if (auto v = value("AMPLIHACK_MAX_SESSIONS"); !v.empty()) out.max_sessions = v;
  out.allow_all_tools = value("AMPLIHACK_NO_ALLOW_ALL_TOOLS").empty();
  if (!value("AMPLIHACK_RATELIMIT_FALLBACK_AUTO_MODEL").empty()) out.fallback_model = "auto";
  auto ignored = [&](const char* name, const std::string& text, const char* expected) {
    out.warnings.push_back(std::string(name) + "='" + text + "' is not " + expected + "; ignored");
  };
  if (auto v = value("AMPLIHACK_RATELIMIT_MAX_RETRIES"); !v.empty()) {
    int n = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && end == v.data() + v.size() && n >= 0 && n <= 100)
      out.rate_limit_retries = n;
    else
      ignored("AMPLIHACK_RATELIMIT_MAX_RETRIES", v, "a whole number from 0 to 100");
  }
  for (auto [name, field] : {std::pair{"AMPLIHACK_RATELIMIT_BASE_DELAY_SECS", &out.rate_limit_delay},
                             {"AMPLIHACK_RATELIMIT_MAX_DELAY_SECS", &out.rate_limit_max_delay}}) {
    const auto v = value(name);
    if (v.empty()) continue;
    char* end = nullptr;
    const double seconds = std::strtod(v.c_str(), &end);
    if (end != v.c_str() && *end == '\0' && std::isfinite(seconds) && seconds >= 0 && seconds <= 86400)
      *field = seconds;
    else
      ignored(name, v, "a number of seconds from 0 to 86400");
  }
  // As amplihack does: the cap (its default 600 s, as arun's) is never below the first delay.
  if (out.rate_limit_delay && *out.rate_limit_delay > out.rate_limit_max_delay.value_or(600.0))
    out.rate_limit_max_delay = out.rate_limit_delay;
  return out;
}

}  // namespace arun::io
