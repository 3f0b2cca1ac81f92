#include "output/event_json.hpp"

#include "output/output_values.hpp"
#include "output/result_format.hpp"

#include <ctime>
#include <cstdio>

namespace arun::io {
namespace {

bool in_range(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

// Length of the well-formed UTF-8 sequence starting at s[i] (Unicode table 3-7), 0 if none.
std::size_t valid_sequence_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) -> unsigned char { return i + k < s.size() ? s[i + k] : 0; };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  const auto cont = [&](std::size_t k) { return in_range(at(k), 0x80, 0xBF); };
  if (in_range(c, 0xC2, 0xDF)) return cont(1) ? 2 : 0;
  if (in_range(c, 0xE0, 0xEF)) {
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return in_range(at(1), lo, hi) && cont(2) ? 3 : 0;
  }
  if (in_range(c, 0xF0, 0xF4)) {
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return in_range(at(1), lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

void add_step_end(boost::json::object& o, const step_result& r) {
  o["status"] = to_string(r.status);
  o["duration"] = seconds_of(r.duration);
  if (r.queued) o["queued"] = seconds_of(*r.queued);
  o["attempt"] = r.attempts;
  o["exit_code"] = value_or_null(r.exit_code);
  o["signal"] = value_or_null(r.signal);
  o["timed_out"] = r.timed_out;
  o["error"] = text_or_null(r.error);
  if (r.cached) o["cached"] = true;  // the output came from the cache: no child ran
  if (!r.worktree.empty()) o["worktree"] = r.worktree;
  if (!r.branch.empty()) o["branch"] = r.branch;
  if (r.iterations) o["iterations"] = iterations_to_json(*r.iterations);
  if (r.usage) o["usage"] = usage_to_json(*r.usage);
}

void add_recipe_end(boost::json::object& o, const run_result& r) {
  o["status"] = to_string(r.status);
  o["success"] = r.success();
  o["duration"] = seconds_of(r.duration);
  o["error"] = text_or_null(r.error);
}

bool is_step_event(const event& e) {
  switch (e.kind) {
    case event_kind::recipe_start:
    case event_kind::recipe_end: return false;
    case event_kind::warning: return !e.step.empty();
    case event_kind::limit_changed: return false;
    default: return true;
  }
}

void add_kind_fields(boost::json::object& o, const event& e) {
  switch (e.kind) {
    case event_kind::recipe_start:
      o["recipe"] = e.recipe_name;
      if (e.items) o["steps"] = *e.items;
      break;
    case event_kind::recipe_end:
      o["recipe"] = e.recipe_name;
      if (e.run) add_recipe_end(o, *e.run);
      break;
    case event_kind::step_start:
      if (e.attempt > 0) o["attempt"] = e.attempt;
      if (e.items) o["items"] = *e.items;
      if (!e.group.name.empty())
        o["limit"] = boost::json::object{{"group", e.group.name}, {"running", e.group.running}, {"limit", e.group.limit}};
      break;
    case event_kind::step_output:
      o["stream"] = to_string(e.stream);
      o["line"] = sanitize_utf8(e.line);
      o["truncated"] = e.line_truncated;
      break;
    case event_kind::step_heartbeat: o["elapsed"] = seconds_of(e.elapsed); break;
    case event_kind::step_retry:
      o["attempt"] = e.attempt;
      o["delay"] = seconds_of(e.delay);
      o["error"] = sanitize_utf8(e.message);
      break;
    case event_kind::step_end:
      if (e.result) add_step_end(o, *e.result);
      break;
    case event_kind::approval_requested: o["prompt"] = sanitize_utf8(e.message); break;
    case event_kind::warning: o["message"] = sanitize_utf8(e.message); break;
    case event_kind::limit_changed:
      o["group"] = e.group.name;
      o["running"] = e.group.running;
      o["limit"] = e.group.limit;
      o["configured"] = value_or_null(e.group.configured);
      o["reason"] = e.message;
      break;
  }
}

}  // namespace

std::string format_rfc3339_ms(std::chrono::system_clock::time_point t) {
  // By hand, not gmtime_r + snprintf: every event and journal line carries timestamps, and
  // formatting them was a visible part of a fan-out's per-step cost.
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(t);
  const auto days = std::chrono::floor<std::chrono::days>(ms);
  const std::chrono::year_month_day date{days};
  const std::chrono::hh_mm_ss<std::chrono::milliseconds> time{ms - days};
  std::string text = "0000-00-00T00:00:00.000Z";
  const auto put = [&text](std::size_t end, long long value, int digits) {
    for (int i = 0; i < digits; ++i, value /= 10) text[end - static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
  };
  const int year = static_cast<int>(date.year());
  if (year < 0 || year > 9999) return "0000-01-01T00:00:00.000Z";  // out of the format's range
  put(3, year, 4);
  put(6, static_cast<unsigned>(date.month()), 2);
  put(9, static_cast<unsigned>(date.day()), 2);
  put(12, time.hours().count(), 2);
  put(15, time.minutes().count(), 2);
  put(18, time.seconds().count(), 2);
  put(22, time.subseconds().count(), 3);
  return text;
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339_ms(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, millis = 0, used = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute, &second, &used) != 6)
    return std::nullopt;
  std::string_view rest = std::string_view(s).substr(static_cast<std::size_t>(used));
  if (rest.starts_with('.')) {
    int digits = 0;
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
      if (digits++ < 3) millis = millis * 10 + (rest.front() - '0');
      rest.remove_prefix(1);
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) millis *= 10;
  }
  if (rest != "Z") return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok() || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return std::nullopt;
  return std::chrono::sys_days{date} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
         std::chrono::seconds{second} + std::chrono::milliseconds{millis};
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = valid_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

boost::json::object event_to_json(const event& e) {
  boost::json::object o;
  o["ts"] = format_rfc3339_ms(e.ts);
  o["event"] = to_string(e.kind);
  o["session_id"] = e.session_id;
  if (is_step_event(e)) {
    // `step` is the name of docs/reference/formats.md, "Events"; `step_id` is the one every other
    // output of arun uses.
    o["step"] = e.step;
    o["step_id"] = e.step;
    o["type"] = e.step_type;
  }
  add_kind_fields(o, e);
  return o;
}

}  // namespace arun::io
