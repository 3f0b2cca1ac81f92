// `sessions show` on a live run: the status of the session's latest run, replayed from the
// lines of its events.jsonl (no process, no clock: the time is given).
#include <catch2/catch.hpp>

#include "output/event_json.hpp"
#include "session/live_status.hpp"

using namespace arun::io;

namespace {

std::chrono::system_clock::time_point at(const char* text) { return *parse_rfc3339_ms(text); }

}  // namespace

TEST_CASE("live status: the latest run's events give what runs, ended, failed and was kept, and its status line") {
  live_status live;
  live.add_events(
      // An earlier run, killed while `old` ran: forgotten at the next start.
      R"({"ts":"2026-11-21T13:40:00.000Z","event":"recipe_start","session_id":"s","recipe":"demo","steps":1})" "\n"
      R"({"ts":"2026-11-21T13:40:00.000Z","event":"step_start","session_id":"s","step":"old","step_id":"old","type":"bash"})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"recipe_start","session_id":"s","recipe":"demo","steps":1})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_start","session_id":"s","step":"fan","step_id":"fan","type":"loop","items":4})" "\n"
      // Taken from the journal: an end without a start.
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_end","session_id":"s","step":"fan[0]","step_id":"fan[0]","type":"bash","status":"completed"})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_start","session_id":"s","step":"fan[1]","step_id":"fan[1]","type":"bash"})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_start","session_id":"s","step":"fan[2]","step_id":"fan[2]","type":"bash"})" "\n"
      R"({"ts":"2026-11-21T13:45:02.000Z","event":"step_output","session_id":"s","step":"fan[1]","step_id":"fan[1]","type":"bash","stream":"stdout","line":"x","truncated":false})" "\n"
      R"({"ts":"2026-11-21T13:45:04.000Z","event":"step_end","session_id":"s","step":"fan[1]","step_id":"fan[1]","type":"bash","status":"failed"})" "\n"
      R"({"ts":"2026-11-21T13:45:05.)");  // torn: passed over
  REQUIRE(live.active());
  const auto c = live.counts();
  CHECK(c.running == 1);
  CHECK(c.finished == 1);
  CHECK(c.failed == 1);
  CHECK(c.kept == 1);
  REQUIRE(live.loops().size() == 1);
  CHECK(live.loops()[0]->done == 2);
  // 1 ran in 6 s, 2 are left: 12 s (not 6 s, as if the kept one had run too).
  CHECK(live.line(at("2026-11-21T13:45:06.000Z"), 160) == "[1/1] fan 2/4 · 1 running · 1 failed · 0:06 · ETA 0:12");
}

TEST_CASE("live status: only what a journal kept counts as kept, and cache hits and budget refusals took no time either") {
  live_status live;
  live.add_events(
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"recipe_start","session_id":"s","recipe":"demo","steps":1})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_start","session_id":"s","step":"fan","step_id":"fan","type":"loop","items":6})" "\n"
      // From the journal: completed and failed records.
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_end","session_id":"s","step":"fan[0]","step_id":"fan[0]","type":"bash","status":"completed"})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_end","session_id":"s","step":"fan[1]","step_id":"fan[1]","type":"bash","status":"failed"})" "\n"
      // From the cache, and refused by the budget: not kept, and no time of this run either.
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_end","session_id":"s","step":"fan[2]","step_id":"fan[2]","type":"bash","status":"completed","cached":true})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_end","session_id":"s","step":"fan[3]","step_id":"fan[3]","type":"bash","status":"not_run"})" "\n"
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"step_start","session_id":"s","step":"fan[4]","step_id":"fan[4]","type":"bash"})" "\n"
      R"({"ts":"2026-11-21T13:45:04.000Z","event":"step_end","session_id":"s","step":"fan[4]","step_id":"fan[4]","type":"bash","status":"completed"})" "\n");
  CHECK(live.counts().kept == 2);
  // 1 ran in 4 s, 1 is left: 4 s (the four that did not run took none of it).
  CHECK(live.line(at("2026-11-21T13:45:04.000Z"), 160) == "[1/1] fan 5/6 · 0 running · 1 failed · 0:04 · ETA 0:04");
}

TEST_CASE("live status: a run that ended is not active") {
  live_status live;
  live.add_events(
      R"({"ts":"2026-11-21T13:45:00.000Z","event":"recipe_start","session_id":"s","recipe":"demo","steps":1})" "\n"
      R"({"ts":"2026-11-21T13:45:01.000Z","event":"recipe_end","session_id":"s","recipe":"demo","status":"completed"})" "\n");
  CHECK_FALSE(live.active());
  CHECK(live.line(at("2026-11-21T13:45:06.000Z"), 160).empty());
}
