#include "session/live_status.hpp"

#include "files/json_text.hpp"
#include "output/event_json.hpp"
#include "session/session_record.hpp"

#include <boost/json/parse.hpp>

#include <array>

namespace arun::io {
namespace {

namespace json = boost::json;

// The board's clock is steady; an event's time is the wall clock. Both sides of every
// difference it takes come through here, so the frames agree.
status_board::clock::time_point board_time(std::chrono::system_clock::time_point t) {
  return status_board::clock::time_point(std::chrono::duration_cast<status_board::clock::duration>(t.time_since_epoch()));
}

std::optional<event_kind> kind_from(std::string_view name) {
  constexpr std::array kinds{event_kind::recipe_start, event_kind::step_start, event_kind::step_retry,
                             event_kind::step_end, event_kind::recipe_end};
  for (const auto k : kinds)
    if (to_string(k) == name) return k;
  return std::nullopt;  // output lines, heartbeats, warnings: nothing the counts need
}

}  // namespace

void live_status::add_events(std::string_view jsonl) {
  while (!jsonl.empty()) {
    const auto end = jsonl.find('\n');
    add_line(jsonl.substr(0, end));
    if (end == std::string_view::npos) break;
    jsonl.remove_prefix(end + 1);
  }
}

void live_status::add_line(std::string_view line) {
  // Most lines are output lines: passed over before they are parsed.
  if (line.find("\"event\":\"step_output\"") != std::string_view::npos) return;
  boost::system::error_code ec;
  const auto v = json::parse(line, ec);
  if (ec || !v.is_object()) return;
  const auto& o = v.get_object();
  const auto kind = kind_from(string_view_member(o, "event"));
  const auto ts = parse_rfc3339_ms(string_view_member(o, "ts"));
  if (!kind || !ts) return;
  event e;
  e.kind = *kind;
  e.ts = *ts;
  e.step = std::string(string_view_member(o, "step"));
  e.step_type = std::string(string_view_member(o, "type"));
  e.items = count_member(o, *kind == event_kind::recipe_start ? "steps" : "items");
  if (const auto attempt = count_member(o, "attempt")) e.attempt = static_cast<int>(*attempt);
  step_result result;
  if (*kind == event_kind::step_end) {
    result.step_id = e.step;
    result.status = status_from(string_view_member(o, "status")).value_or(step_status::not_run);
    const auto* cached = o.if_contains("cached");
    result.cached = cached && cached->is_bool() && cached->get_bool();
    e.result = &result;
  }
  if (*kind == event_kind::recipe_start) {  // a run of the session begins: the earlier ones are over
    board_ = status_board{};
    loops_.clear();
  }
  board_.on_event(e, board_time(e.ts));
  loops_.follow(e);
  if (*kind == event_kind::recipe_end) loops_.clear();
}

std::string live_status::line(std::chrono::system_clock::time_point now, std::size_t columns) const {
  return board_.render(loops_, columns, board_time(now), false);
}

}  // namespace arun::io
