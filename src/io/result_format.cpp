#include "result_format.hpp"

#include <boost/json/serialize.hpp>
#include <fmt/format.h>

namespace arun::io {
namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

template <typename T>
boost::json::value optional_value(const std::optional<T>& v) {
  if (v) return *v;
  return nullptr;
}

boost::json::value text_or_null(const std::string& s) {
  if (s.empty()) return nullptr;
  return boost::json::string(s);
}

boost::json::object step_to_json(const step_result& s) {
  boost::json::object o;
  o["step_id"] = s.step_id;
  o["status"] = to_string(s.status);
  o["output"] = s.output;
  o["error"] = text_or_null(s.error);
  o["duration"] = seconds(s.duration);
  o["attempts"] = s.attempts;
  o["exit_code"] = optional_value(s.exit_code);
  o["signal"] = optional_value(s.signal);
  o["timed_out"] = s.timed_out;
  o["truncated"] = s.truncated;
  return o;
}

}  // namespace

boost::json::object result_to_json(const run_result& r) {
  boost::json::object o;
  o["recipe_name"] = r.recipe_name;
  o["success"] = r.success();
  o["status"] = to_string(r.status);
  o["session_id"] = r.session_id;
  o["duration"] = seconds(r.duration);
  o["output"] = r.output;
  o["context"] = r.context;
  boost::json::array steps;
  for (const auto& s : r.step_results) steps.push_back(step_to_json(s));
  o["step_results"] = std::move(steps);
  return o;
}

std::string result_to_text(const run_result& r) {
  std::string text = fmt::format("{}: {} in {:.2f}s (session {})\n", r.recipe_name, to_string(r.status),
                                 seconds(r.duration), r.session_id);
  for (const auto& s : r.step_results) {
    text += fmt::format("  {:<9} {} ({:.2f}s)", to_string(s.status), s.step_id, seconds(s.duration));
    if (!s.error.empty()) text += " " + s.error.substr(0, s.error.find('\n'));
    text += "\n";
  }
  return text;
}

}  // namespace arun::io
