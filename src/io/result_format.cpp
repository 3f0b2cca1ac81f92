#include "result_format.hpp"

#include "event_json.hpp"

#include <boost/json/array.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace arun::io {
namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

template <typename T>
boost::json::value optional_value(const std::optional<T>& v) {
  if (v) return *v;
  return nullptr;
}

// RFC 3339 (UTC, milliseconds), null for an instance that never started.
boost::json::value time_or_null(std::chrono::system_clock::time_point t) {
  if (t == std::chrono::system_clock::time_point{}) return nullptr;
  return boost::json::string(format_rfc3339_ms(t));
}

boost::json::value text_or_null(const std::string& s) {
  if (s.empty()) return nullptr;
  return boost::json::string(sanitize_utf8(s));
}

std::string_view first_line(std::string_view text) { return text.substr(0, text.find('\n')); }

std::string iterations_text(const iteration_counts& c) {
  std::string text = fmt::format(" iterations {}/{} completed", c.completed, c.total);
  if (c.failed > 0) text += fmt::format(", {} failed", c.failed);
  if (c.skipped > 0) text += fmt::format(", {} skipped", c.skipped);
  if (c.cancelled > 0) text += fmt::format(", {} cancelled", c.cancelled);
  if (c.not_run > 0) text += fmt::format(", {} not run", c.not_run);
  if (c.waiting > 0) text += fmt::format(", {} waiting for approval", c.waiting);
  return text;
}

void append_step_text(std::string& text, const step_result& s, int depth) {
  const std::string indent(static_cast<std::size_t>(2 + 2 * depth), ' ');
  text += fmt::format("{}{:<9} {} ({:.2f}s)", indent, to_string(s.status), s.step_id, seconds(s.duration));
  if (s.iterations) text += iterations_text(*s.iterations);
  if (!s.error.empty()) text += fmt::format(" {}", first_line(s.error));
  text += "\n";
  for (const auto& child : s.children) append_step_text(text, child, depth + 1);
}

}  // namespace

boost::json::object document_header() {
  return {{"format_version", json_format_version}, {"arun_version", ARUN_VERSION}};
}

boost::json::object iterations_to_json(const iteration_counts& c) {
  boost::json::object o;
  o["total"] = c.total;
  o["completed"] = c.completed;
  o["failed"] = c.failed;
  o["skipped"] = c.skipped;
  if (c.waiting > 0) o["waiting"] = c.waiting;
  // Only when there are any: the older shape {total, completed, failed, skipped} stays.
  if (c.cancelled > 0) o["cancelled"] = c.cancelled;
  if (c.not_run > 0) o["not_run"] = c.not_run;
  return o;
}

boost::json::object step_to_json(const step_result& s) {
  boost::json::object o;
  o["step_id"] = s.step_id;
  o["status"] = to_string(s.status);
  o["output"] = s.output;
  o["error"] = text_or_null(s.error);
  o["duration"] = seconds(s.duration);
  o["started_at"] = time_or_null(s.started_at);
  o["ended_at"] = time_or_null(s.ended_at);
  o["attempts"] = s.attempts;
  o["exit_code"] = optional_value(s.exit_code);
  o["signal"] = optional_value(s.signal);
  o["timed_out"] = s.timed_out;
  o["truncated"] = s.truncated;
  if (s.iterations) o["iterations"] = iterations_to_json(*s.iterations);
  if (!s.children.empty()) {
    boost::json::array children;
    for (const auto& child : s.children) children.push_back(step_to_json(child));
    o["children"] = std::move(children);
  }
  return o;
}

boost::json::object result_to_json(const run_result& r) {
  boost::json::object o = document_header();
  o["recipe_name"] = r.recipe_name;
  o["success"] = r.success();
  o["status"] = to_string(r.status);
  o["session_id"] = r.session_id;
  o["duration"] = seconds(r.duration);
  o["started_at"] = time_or_null(r.started_at);
  o["ended_at"] = time_or_null(r.ended_at);
  o["output"] = r.output;
  o["context"] = r.context;
  boost::json::array steps;
  for (const auto& s : r.step_results) steps.push_back(step_to_json(s));
  o["step_results"] = std::move(steps);
  o["error"] = text_or_null(r.error);
  if (!r.waiting.empty()) {
    // `waiting_approval` is the first gate (one gate is the common case, and what scripts
    // read); `waiting_approvals` lists every gate a fan-out left waiting.
    boost::json::array gates;
    for (const auto& w : r.waiting)
      // `step` is the name older readers know; `step_id` is the one every other output uses.
      gates.push_back(boost::json::object{{"step_id", w.step}, {"step", w.step}, {"prompt", sanitize_utf8(w.prompt)}});
    o["waiting_approval"] = gates.front();
    o["waiting_approvals"] = std::move(gates);
  }
  return o;
}

std::string result_to_text(const run_result& r) {
  std::string text = fmt::format("{}: {} in {:.2f}s (session {})\n", r.recipe_name, to_string(r.status),
                                 seconds(r.duration), r.session_id);
  for (const auto& s : r.step_results) append_step_text(text, s, 0);
  if (!r.error.empty()) text += fmt::format("error: {}\n", first_line(r.error));
  for (const auto& w : r.waiting) {
    text += fmt::format("waiting for approval at {}:\n", w.step);
    std::string_view prompt = w.prompt;
    // The whole prompt: it is what the person running `arun approve` has to decide on.
    while (!prompt.empty()) {
      const auto line = first_line(prompt);
      text += fmt::format("  {}\n", line);
      prompt.remove_prefix(std::min(prompt.size(), line.size() + 1));
    }
  }
  // What was recorded stays; a resume runs what failed fatally, was cancelled or never ran.
  if ((r.status == run_status::failed || r.status == run_status::cancelled) && !r.session_id.empty())
    text += fmt::format("resume with: arun resume {}\n", r.session_id);
  if (r.waiting.size() > 1)
    text += fmt::format("decide each with: arun approve {0} --step INSTANCE (or --all), then: arun resume {0}\n",
                        r.session_id);
  else if (!r.waiting.empty())
    text += fmt::format("decide with: arun approve {0} (or arun deny {0}), then: arun resume {0}\n", r.session_id);
  return text;
}

}  // namespace arun::io
