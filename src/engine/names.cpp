// Display names of the model's enumerations (used in events, results and progress).
#include <arun/engine.hpp>
#include <arun/events.hpp>
#include <arun/results.hpp>

#include <cstdio>
#include <ctime>

namespace arun {

std::string_view to_string(step_status s) noexcept {
  switch (s) {
    case step_status::completed: return "completed";
    case step_status::failed: return "failed";
    case step_status::skipped: return "skipped";
    case step_status::degraded: return "degraded";
    case step_status::cancelled: return "cancelled";
    case step_status::not_run: return "not_run";
  }
  return "unknown";
}

std::string_view to_string(run_status s) noexcept {
  switch (s) {
    case run_status::completed: return "completed";
    case run_status::failed: return "failed";
    case run_status::waiting_approval: return "waiting_approval";
    case run_status::budget_exhausted: return "budget_exhausted";
    case run_status::cancelled: return "cancelled";
  }
  return "unknown";
}

std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::recipe_start: return "recipe_start";
    case event_kind::step_start: return "step_start";
    case event_kind::step_output: return "step_output";
    case event_kind::step_heartbeat: return "step_heartbeat";
    case event_kind::step_retry: return "step_retry";
    case event_kind::step_end: return "step_end";
    case event_kind::approval_requested: return "approval_requested";
    case event_kind::limit_changed: return "limit_changed";
    case event_kind::recipe_end: return "recipe_end";
    case event_kind::warning: return "warning";
  }
  return "unknown";
}

std::string_view to_string(output_stream s) noexcept { return s == output_stream::out ? "stdout" : "stderr"; }

std::string make_session_id(std::chrono::system_clock::time_point now, unsigned random_bits) {
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char id[64];
  std::snprintf(id, sizeof id, "%04d%02d%02d-%02d%02d%02d-%06x", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, random_bits & 0xffffffu);
  return id;
}

}  // namespace arun
