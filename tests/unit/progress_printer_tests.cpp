// Progress on stderr: plain transition lines that summarise big loops, warning dedupe, and the
// live status line with its redraw throttle (an injected clock: no sleeping).
#include <catch2/catch.hpp>

#include "event_samples.hpp"
#include "output/progress_loops.hpp"
#include "output/progress_printer.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

using namespace arun;
using namespace arun::io;
using namespace std::chrono_literals;

namespace {

struct fixture {
  test::captured_file file;
  std::chrono::steady_clock::time_point now{};
  progress_printer printer;

  explicit fixture(progress_mode mode, std::size_t width = 200, bool show_output = true, bool verbose = false)
      : printer(file.get(), options(mode, width, show_output, verbose)) {}

  progress_options options(progress_mode mode, std::size_t width, bool show_output, bool verbose) {
    progress_options o;
    o.mode = mode;
    o.width = width;
    o.show_output = show_output;
    o.verbose = verbose;
    o.clock = [this] { return now; };
    return o;
  }

  void send(const event& e) { printer.on_event(e); }
  static event recipe_start(std::size_t steps) {
    auto e = test::make_event(event_kind::recipe_start);
    e.items = steps;
    return e;
  }
  void start(const std::string& id) { send(test::step_start(id)); }
  void end(const std::string& id, step_status status = step_status::completed, std::string error = {}) {
    const auto r = test::finished(id, status, std::move(error));
    send(test::step_end(r));
  }
  void iteration(const std::string& id, step_status status = step_status::completed) {
    start(id);
    end(id, status, status == step_status::completed ? "" : "boom");
  }
  std::vector<std::string> lines() {
    std::vector<std::string> out;
    std::istringstream in(file.text());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
};

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// What a terminal shows on the last line: the text after the last erase, if not ended.
std::string visible_status(const std::string& text) {
  const auto erase = text.rfind("\r\x1b[K");
  if (erase == std::string::npos) return {};
  const auto rest = text.substr(erase + 4);
  return rest.find('\n') == std::string::npos ? rest : std::string();
}

constexpr const char* erase = "\r\x1b[K";

}  // namespace

TEST_CASE("loop ids: enclosing loop, iteration test and index-free key") {
  CHECK(detail::enclosing_loop("fan[3]") == "fan");
  CHECK(detail::enclosing_loop("fan[3]/a/b") == "fan");
  CHECK(detail::enclosing_loop("o[2]/i[5]/x") == "o[2]/i");
  CHECK_FALSE(detail::enclosing_loop("call/child"));
  CHECK(detail::is_iteration("call/fan[12]"));
  CHECK_FALSE(detail::is_iteration("fan[12]/child"));
  CHECK_FALSE(detail::is_iteration("fan[]"));
  CHECK(detail::without_indices("o[2]/i[15]/x") == "o[]/i[]/x");
}

TEST_CASE("plain progress prints start and end lines of steps and their output") {
  fixture f(progress_mode::plain);
  f.send(test::make_event(event_kind::recipe_start));
  f.start("build");
  auto out = test::make_event(event_kind::step_output, "build");
  out.line = "compiling";
  f.send(out);
  f.end("build");
  f.start("test");
  f.end("test", step_status::failed, "exit code 2\nmore detail");
  // With both streams in the snippet, stderr's last line is the reason (not the reply on stdout).
  f.start("ask");
  f.end("ask", step_status::failed, "exit code 1\nwarming up\nquota exceeded\n\n--- stdout ---\nHere is my answer\n");
  CHECK(f.lines() == std::vector<std::string>{"arun: running 'demo' (session 20261121-134501-3f9a2c)", "  -> build",
                                              "     build | compiling", "  ok build completed (0.00s)", "  -> test",
                                              "  !! test failed (0.00s): exit code 2 | more detail", "  -> ask",
                                              "  !! ask failed (0.00s): exit code 1 | quota exceeded"});
}

TEST_CASE("output lines are not echoed when show_output is off") {
  fixture f(progress_mode::plain, 200, false);
  auto out = test::make_event(event_kind::step_output, "build");
  out.line = "compiling";
  f.send(out);
  CHECK(f.file.text().empty());
}

TEST_CASE("a 1000-item foreach prints failures and a summary every 10 percent only") {
  fixture f(progress_mode::plain);
  f.send(test::make_event(event_kind::recipe_start));
  f.send(test::loop_start("fan", 1000));
  for (int i = 0; i < 1000; ++i) {
    const auto id = "fan[" + std::to_string(i) + "]";
    const auto status = (i == 5 || i == 500 || i == 999) ? step_status::failed : step_status::completed;
    f.start(id);
    f.start(id + "/child");
    auto out = test::make_event(event_kind::step_output, id + "/child");
    out.line = "noise";
    f.send(out);
    f.end(id + "/child", status, status == step_status::failed ? "boom" : "");
    f.end(id, status, status == step_status::failed ? "boom" : "");
  }
  auto loop = test::finished("fan", step_status::failed, "3 iterations failed");
  loop.iterations.emplace();
  loop.iterations->total = 1000;
  loop.iterations->completed = 997;
  loop.iterations->failed = 3;
  f.send(test::step_end(loop, "loop"));

  const auto lines = f.lines();
  CHECK(lines.size() == 1 + 1 + 6 + 9 + 1);
  CHECK(lines[1] == "  -> fan (1000 items)");
  CHECK(std::count(lines.begin(), lines.end(), "  !! fan[500] failed (0.00s): boom") == 1);
  CHECK(std::count(lines.begin(), lines.end(), "  !! fan[5]/child failed (0.00s): boom") == 1);
  CHECK(std::count(lines.begin(), lines.end(), "  .. fan 100/1000 iterations done, 1 failed") == 1);
  CHECK(std::count(lines.begin(), lines.end(), "  .. fan 600/1000 iterations done, 2 failed") == 1);
  CHECK(lines.back() == "  !! fan failed (0.00s) 997/1000 iterations completed, 3 failed: 3 iterations failed");
  CHECK(f.file.text().find("fan[7]") == std::string::npos);
  CHECK(f.file.text().find("noise") == std::string::npos);
}

TEST_CASE("verbose progress shows every instance of a loop with its output lines, tagged by instance id") {
  fixture f(progress_mode::plain, 200, true, true);
  f.send(test::make_event(event_kind::recipe_start));
  f.send(test::loop_start("fan", 2));
  for (int i = 0; i < 2; ++i) {
    const auto id = "fan[" + std::to_string(i) + "]";
    f.start(id);
    auto out = test::make_event(event_kind::step_output, id);
    const std::string line = "item " + std::to_string(i);  // the event only views it
    out.line = line;
    f.send(out);
    f.end(id);
  }
  const auto text = f.file.text();
  CHECK_THAT(text, Catch::Contains("  -> fan[0]\n     fan[0] | item 0\n  ok fan[0]"));
  CHECK_THAT(text, Catch::Contains("     fan[1] | item 1\n"));
}

TEST_CASE("a while loop, or a loop known only from its iterations, is summarised every 10 iterations") {
  fixture f(progress_mode::plain);
  f.send(test::loop_start("poll", std::nullopt));
  for (int i = 0; i < 25; ++i) f.iteration("poll[" + std::to_string(i) + "]");
  for (int i = 0; i < 10; ++i) f.iteration("call/each[" + std::to_string(i) + "]");
  CHECK(f.lines() == std::vector<std::string>{"  -> poll", "  .. poll 10 iterations done, 0 failed",
                                              "  .. poll 20 iterations done, 0 failed",
                                              "  .. call/each 10 iterations done, 0 failed"});
}

TEST_CASE("nested loops are summarised by the outer loop only and iteration retries are counted") {
  fixture f(progress_mode::plain);
  f.send(test::loop_start("outer", 2));
  for (int i = 0; i < 2; ++i) {
    const auto it = "outer[" + std::to_string(i) + "]";
    f.start(it);
    f.send(test::loop_start(it + "/inner", 50));
    for (int k = 0; k < 50; ++k) f.iteration(it + "/inner[" + std::to_string(k) + "]");
    auto retry = test::make_event(event_kind::step_retry, it + "/inner[3]");
    retry.attempt = 1;
    f.send(retry);
    f.end(it + "/inner");
    f.end(it);
  }
  CHECK(f.lines() == std::vector<std::string>{"  -> outer (2 items)", "  .. outer 1/2 iterations done, 0 failed"});
}

TEST_CASE("retries and heartbeats of steps get a line each") {
  fixture f(progress_mode::plain);
  auto retry = test::make_event(event_kind::step_retry, "flaky");
  retry.attempt = 1;
  retry.delay = 2500ms;
  retry.message = "exit code 1\nstderr tail";
  f.send(retry);
  retry.attempt = 2;
  retry.delay = 300s;
  retry.message.clear();
  f.send(retry);
  auto beat = test::make_event(event_kind::step_heartbeat, "slow");
  beat.elapsed = 60s;
  f.send(beat);
  auto retry_in_loop = test::make_event(event_kind::step_retry, "fan[2]");
  f.send(retry_in_loop);
  CHECK(f.lines() == std::vector<std::string>{"  .. flaky attempt 1 failed (exit code 1); retrying in 2.5s",
                                              "  .. flaky attempt 2 failed; retrying in 300s",
                                              "  .. slow still running (60s)"});
}

TEST_CASE("a warning repeated by every iteration prints once and is counted at the end") {
  fixture f(progress_mode::plain);
  f.send(test::make_event(event_kind::recipe_start));
  for (int i = 0; i < 1000; ++i) {
    auto w = test::make_event(event_kind::warning, "fan[" + std::to_string(i) + "]/child");
    w.message = "reference 'x' has no value";
    f.send(w);
  }
  auto other = test::make_event(event_kind::warning, "fan[3]/child");
  other.message = "another thing";
  f.send(other);
  auto elsewhere = test::make_event(event_kind::warning, "build");
  elsewhere.message = "reference 'x' has no value";
  f.send(elsewhere);
  run_result run;
  auto end = test::make_event(event_kind::recipe_end);
  end.run = &run;
  f.send(end);
  const auto lines = f.lines();
  CHECK(lines == std::vector<std::string>{"arun: running 'demo' (session 20261121-134501-3f9a2c)",
                                          "  warning: fan[0]/child: reference 'x' has no value",
                                          "  warning: fan[3]/child: another thing",
                                          "  warning: build: reference 'x' has no value",
                                          "  (999 repeated warnings not shown)", "arun: 'demo' completed in 0.00s"});
}

TEST_CASE("the live status line is drawn on ticks, at most every 100 ms, and at once after lines") {
  fixture f(progress_mode::live);
  f.send(f.recipe_start(3));
  f.send(test::loop_start("fan", 100));
  // The loop's start line was printed: the status follows it at once.
  CHECK(f.file.text() == std::string("arun: running 'demo' (session 20261121-134501-3f9a2c)\n") + erase +
                             "[0/3] 0 running · 0:00" + erase + "  -> fan (100 items)\n" + erase +
                             "[1/3] fan 0/100 · 0 running · 0:00");
  f.start("fan[0]");
  f.start("fan[1]");
  CHECK(count_of(f.file.text(), "fan 0/100") == 1);  // events alone do not draw
  f.now += 50ms;
  f.printer.tick();
  CHECK(count_of(f.file.text(), erase) == 3);  // throttled: 50 ms since the last draw
  f.now += 60ms;
  f.end("fan[0]");
  f.printer.tick();
  CHECK(visible_status(f.file.text()) == "[1/3] fan 1/100 · 1 running · 0:00 · ETA 0:10");
  for (int i = 2; i < 50; ++i) f.iteration("fan[" + std::to_string(i) + "]");
  f.now += 100ms;
  f.start("fan[50]");
  f.printer.tick();
  // Never `ETA 0:00` while items are left.
  CHECK(visible_status(f.file.text()) == "[1/3] fan 49/100 · 2 running · 0:00 · ETA 0:01");
  f.now += 2min;
  f.printer.tick();
  // Both running iterations outlived the others (which took no time): named, oldest first.
  CHECK(visible_status(f.file.text()) == "[1/3] fan 49/100 · 2 running · 2:00 · ETA 2:05 · fan[1] 2m00s, fan[50] 2m00s");
  CHECK(f.file.text().find("iterations done") == std::string::npos);  // no plain summaries
}

TEST_CASE("the live status line is cleared before ordinary lines and redrawn after them") {
  fixture f(progress_mode::live);
  f.send(f.recipe_start(1));
  f.send(test::loop_start("fan", 10));
  f.start("fan[3]");
  f.end("fan[3]", step_status::failed, "boom");
  const auto text = f.file.text();
  CHECK(text.find(std::string("0:00") + erase + "  !! fan[3] failed (0.00s): boom\n") != std::string::npos);
  CHECK(visible_status(text) == "[1/1] fan 1/10 · 0 running · 1 failed · 0:00 · ETA 0:01");

  f.end("fan");
  CHECK(f.file.text().substr(text.size()) == std::string(erase) + "  ok fan completed (0.00s)\n" + erase +
                                                 "[1/1] 0 running · 1 failed · 0:00");
}

TEST_CASE("the live status line fits the width: names are shortened first, then labels made terse") {
  auto status_at = [](std::size_t width) {
    fixture f(progress_mode::live, width);
    f.send(f.recipe_start(7));
    f.start("build-the-documentation-site");
    f.send(test::loop_start("fan", 2000));
    for (int i = 0; i < 1233; ++i) f.iteration("fan[" + std::to_string(i) + "]");
    f.iteration("fan[1233]", step_status::failed);
    f.now += 31s;
    f.start("fan[1234]");
    f.printer.tick();
    return visible_status(f.file.text());
  };
  CHECK(status_at(121) == "[2/7] fan 1234/2000 · 2 running · 1 failed · 0:31 · ETA 0:19 · build-the-documentation-site 31s");
  // One column is kept free: a line as wide as the terminal wraps on some.
  CHECK(status_at(80) == "[2/7] fan 1234/2000 · 2 running · 1 failed · 0:31 · ETA 0:19 · build-the-docum…");
  CHECK(status_at(63) == "[2/7] fan 1234/2000 · 2 running · 1 failed · 0:31 · ETA 0:19");
  CHECK(status_at(60) == "[2/7] 1234/2000 · 2 run · 1 fail · 0:31 · ~0:19 · build-th…");
  CHECK(status_at(50) == "[2/7] 1234/2000 · 2 run · 1 fail · 0:31 · ~0:19");
  CHECK(status_at(40) == "[2/7] 1234/2000 2 run 1 fail 0:31 ~0:19");
  CHECK(status_at(20) == "[2/7] 1234/2000 2 …");
  for (const std::size_t width : {20u, 40u, 50u, 60u, 63u, 80u, 121u}) {
    const auto status = status_at(width);
    CHECK(std::count_if(status.begin(), status.end(), [](char c) { return (c & 0xC0) != 0x80; }) <= long(width - 1));
  }
}

TEST_CASE("colour: the status marks and the failure count, only when asked") {
  test::captured_file file;
  progress_options o;
  o.mode = progress_mode::live;
  o.width = 100;
  o.color = true;
  progress_printer printer(file.get(), o);
  auto start = test::make_event(event_kind::recipe_start);
  start.items = 2;
  printer.on_event(start);
  const auto ok = test::finished("a", step_status::completed);
  printer.on_event(test::step_end(ok));
  const auto bad = test::finished("b", step_status::failed, "boom");
  printer.on_event(test::step_end(bad));
  const auto text = file.text();
  CHECK(text.find("  \x1b[32mok\x1b[0m a completed") != std::string::npos);
  CHECK(text.find("  \x1b[31m!!\x1b[0m b failed") != std::string::npos);
  CHECK(text.find("\x1b[31m1 failed\x1b[0m") != std::string::npos);
}

TEST_CASE("plain progress prints the status as a line after 30 s without any other line") {
  fixture f(progress_mode::plain);
  f.send(f.recipe_start(2));
  f.start("slow");
  f.printer.tick();  // starts the clock
  const auto before = f.file.text();
  f.now += 29s;
  f.printer.tick();
  CHECK(f.file.text() == before);
  f.now += 2s;
  f.printer.tick();
  CHECK(f.file.text().substr(before.size()) == "  .. [1/2] 1 running · 0:31 · slow 31s\n");
  f.now += 10s;
  f.printer.tick();
  CHECK(count_of(f.file.text(), "  .. [1/2]") == 1);  // bounded: one per 30 s
  CHECK(f.file.text().find('\x1b') == std::string::npos);
}

TEST_CASE("the live status line is gone at the end of the run and when the printer goes") {
  std::string after_end;
  test::captured_file file;
  {
    progress_options o;
    o.mode = progress_mode::live;
    o.width = 100;
    progress_printer printer(file.get(), o);
    printer.on_event(test::make_event(event_kind::recipe_start));
    printer.on_event(test::loop_start("fan", 4));
    run_result run;
    auto end = test::make_event(event_kind::recipe_end);
    end.run = &run;
    printer.on_event(end);
    after_end = file.text();
    CHECK(after_end.find(std::string(erase) + "arun: 'demo' completed") != std::string::npos);
    CHECK(visible_status(after_end).empty());
    printer.on_event(test::make_event(event_kind::recipe_start));  // a second run
    printer.on_event(test::loop_start("again", 2));
    CHECK_FALSE(visible_status(file.text()).empty());
  }
  CHECK(file.text().substr(file.text().size() - 4) == erase);
}

TEST_CASE("progress ignores a step_end without a result") {
  fixture f(progress_mode::live);
  auto e = test::make_event(event_kind::step_end, "build");
  f.send(e);
  CHECK(f.file.text().empty());
}

TEST_CASE("the live status line shows each limited provider and what the agents spent") {
  fixture f(progress_mode::live, 200);
  f.send(f.recipe_start(1));
  auto start = test::step_start("ask[0]");
  start.step_type = "agent";
  start.group = {"claude", 1, 4, 4};
  f.send(start);
  start.step = "ask[1]";
  start.group.running = 2;
  f.send(start);
  auto done = test::finished("ask[0]", step_status::completed);
  auto& u = done.usage.emplace();
  u.provider = "claude";
  u.calls = 1;
  u.input = 40000;
  u.output = 2000;
  u.cost_usd = 0.42;
  auto end = test::step_end(done);
  end.step_type = "agent";
  end.spend = event::spend_state{0.42, true, 42000, std::nullopt, std::nullopt};  // the run's, as the engine says
  f.send(end);
  auto changed = test::make_event(event_kind::limit_changed);
  changed.group = {"claude", 1, 2, 4};
  changed.message = "rate limited";
  f.send(changed);
  f.now += 2s;
  f.printer.tick();
  const auto status = visible_status(f.file.text());
  CHECK(status.find("claude 1/2") != std::string::npos);
  CHECK(status.find("$0.4200") != std::string::npos);
  CHECK(status.find("42k tok") != std::string::npos);
  CHECK(f.file.text().find("!! claude: rate limited; at most 2 at once now (1 running)") != std::string::npos);
}

TEST_CASE("a question pauses the live status line: erased, nothing drawn, lines held until it is answered") {
  fixture f(progress_mode::live);
  const status_registration registered(&f.printer);
  f.send(f.recipe_start(2));
  f.start("slow");
  CHECK_FALSE(visible_status(f.file.text()).empty());
  std::string asked;
  {
    const status_paused question;
    CHECK(f.file.text().ends_with(erase));  // the status line is gone before the question
    asked = f.file.text();
    f.now += 2s;
    f.printer.tick();
    f.start("other");  // a line, while the question is open
    f.now += 2s;
    f.printer.tick();
    CHECK(f.file.text() == asked);  // nothing drawn over the question
  }
  const auto after = f.file.text().substr(asked.size());
  CHECK(after.starts_with("  -> other\n"));  // held back, written after the answer
  CHECK(visible_status(f.file.text()) == "[2/2] 2 running · 0:04 · slow 4s, other 2s");
}

TEST_CASE("without a registered status line a question pauses nothing") {
  fixture f(progress_mode::live);
  f.send(f.recipe_start(1));
  f.start("slow");
  const auto before = f.file.text();
  { const status_paused question; }
  CHECK(f.file.text() == before);
}

TEST_CASE("loop_time_left: this run's own rate, never 0:00 while items are left") {
  CHECK(loop_time_left(100, 50, 0, 10s) == 10s);
  CHECK(loop_time_left(100, 95, 90, 10s) == 10s);  // 90 taken from the journal: 5 ran in 10 s
  CHECK(loop_time_left(100, 90, 90, 10s) == std::nullopt);  // none of this run ended yet
  CHECK(loop_time_left(100, 0, 0, 10s) == std::nullopt);
  CHECK(loop_time_left(100, 100, 0, 10s) == std::nullopt);  // nothing left
  CHECK(loop_time_left(2000, 1999, 0, 1s) == 1s);  // at least a second
}

TEST_CASE("outlived: twice the median and at least 5 s, or 10 s while nothing ended") {
  CHECK_FALSE(outlived(9s, std::nullopt));
  CHECK(outlived(10s, std::nullopt));
  CHECK(outlived(21s, 1s));
  CHECK_FALSE(outlived(4s, 1s));  // twice as long, but short
  CHECK_FALSE(outlived(30s, 20s));
  CHECK(outlived(41s, 20s));
}

namespace {
std::string shard(int i) { return "shard[" + std::to_string(i) + "]"; }
}  // namespace

TEST_CASE("the status line names the oldest running instances with their age when they outlive the rest") {
  fixture f(progress_mode::live);
  f.send(f.recipe_start(1));
  f.send(test::loop_start("shard", 20));
  for (int i = 0; i < 18; ++i) f.start(shard(i));
  f.now += 1s;
  for (int i = 0; i < 18; ++i)
    if (i != 14 && i != 15) f.end(shard(i));  // 1 s each
  f.start(shard(18));
  f.start(shard(19));
  f.now += 1s;
  f.end(shard(18));
  f.now += 3s;
  f.printer.tick();
  // 5 s and 4 s: more than twice the others' 1 s, and long enough to say so.
  CHECK(visible_status(f.file.text()) == "[1/1] shard 17/20 · 3 running · 0:05 · ETA ? · shard[14] 5s, shard[15] 5s");
  f.now += 16s;
  f.printer.tick();
  // The oldest two only; an estimate from the rate (4 s) shorter than their 21 s is none.
  CHECK(visible_status(f.file.text()) == "[1/1] shard 17/20 · 3 running · 0:21 · ETA ? · shard[14] 21s, shard[15] 21s");
  f.end(shard(14));
  f.end(shard(15));
  f.now += 100ms;
  f.printer.tick();
  CHECK(visible_status(f.file.text()) == "[1/1] shard 19/20 · 1 running · 0:21 · ETA ? · shard[19] 20s");
}

TEST_CASE("the status line names a running instance only once it took more than twice the others' time") {
  fixture f(progress_mode::live);
  f.send(f.recipe_start(1));
  f.send(test::loop_start("shard", 4));
  f.start(shard(0));
  f.start(shard(1));
  f.now += 8s;
  f.end(shard(0));
  f.start(shard(2));
  f.now += 7s;  // shard[1]: 15 s, not twice the 8 s the first took
  f.printer.tick();
  CHECK(visible_status(f.file.text()) == "[1/1] shard 1/4 · 2 running · 0:15 · ETA 0:45");
  f.now += 2s;
  f.printer.tick();
  CHECK(visible_status(f.file.text()) == "[1/1] shard 1/4 · 2 running · 0:17 · ETA 0:51 · shard[1] 17s");
}

TEST_CASE("an instance is judged against the other instances of its own step, not a faster loop's") {
  CHECK(step_shape("fan[3]/build") == "fan[]/build");
  CHECK(step_shape("top[12]/each[0]/x") == "top[]/each[]/x");
  CHECK(step_shape("plain") == "plain");
  fixture f(progress_mode::live);
  f.send(f.recipe_start(2));
  // A fast loop: its items took 1 s each.
  f.send(test::loop_start("quick", 3));
  for (int i = 0; i < 3; ++i) f.start("quick[" + std::to_string(i) + "]");
  f.now += 1s;
  for (int i = 0; i < 3; ++i) f.end("quick[" + std::to_string(i) + "]");
  // A slow one: 20 s each is what its items take; 30 s is not outliving them.
  f.send(test::loop_start("slow", 4));
  for (int i = 0; i < 3; ++i) f.start("slow[" + std::to_string(i) + "]");
  f.now += 20s;
  f.end("slow[0]");
  f.end("slow[1]");
  f.start("slow[3]");
  f.now += 10s;
  f.printer.tick();
  CHECK(visible_status(f.file.text()).find("slow[2]") == std::string::npos);
  f.now += 11s;  // slow[2]: 41 s, more than twice its step's 20 s
  f.printer.tick();
  CHECK_THAT(visible_status(f.file.text()), Catch::EndsWith("slow[2] 41s"));
}

TEST_CASE("after a resume the ETA comes from this run's rate: kept iterations took none of its time") {
  fixture f(progress_mode::live);
  f.send(f.recipe_start(1));
  f.send(test::loop_start("fan", 100));
  for (int i = 0; i < 90; ++i) f.end("fan[" + std::to_string(i) + "]");  // from the journal: no start
  for (int i = 90; i < 95; ++i) f.start("fan[" + std::to_string(i) + "]");
  f.now += 10s;
  for (int i = 90; i < 95; ++i) f.end("fan[" + std::to_string(i) + "]");
  f.printer.tick();
  // 5 ran in 10 s, 5 are left: 10 s (counting the 90 kept, 0.5 s).
  CHECK(visible_status(f.file.text()) == "[1/1] fan 95/100 · 0 running · 0:10 · ETA 0:10");
}

TEST_CASE("loop progress counts cancelled iterations apart from failed ones, as the result does") {
  fixture f(progress_mode::plain);
  f.send(test::make_event(event_kind::recipe_start));
  f.send(test::loop_start("fan", 10));
  f.iteration("fan[0]", step_status::failed);
  for (int i = 1; i < 10; ++i) f.iteration("fan[" + std::to_string(i) + "]", step_status::cancelled);
  // Every 10% is a summary line: the last one before the end says 9 done, 1 failed, 8 cancelled.
  const auto text = f.file.text();
  CHECK(text.find("  .. fan 9/10 iterations done, 1 failed, 8 cancelled") != std::string::npos);
  CHECK(text.find("2 failed") == std::string::npos);
}

TEST_CASE("the run's last progress line does not repeat the failure its step line said") {
  fixture f(progress_mode::plain);
  f.send(test::make_event(event_kind::recipe_start));
  f.start("bad");
  f.end("bad", step_status::failed, "step 'bad': exit code 3");
  run_result run;
  run.status = run_status::failed;
  run.error = "step 'bad': exit code 3";
  auto end = test::make_event(event_kind::recipe_end);
  end.run = &run;
  f.send(end);
  const auto text = f.file.text();
  CHECK(count_of(text, "exit code 3") == 1);
  CHECK(f.lines().back() == "arun: 'demo' failed in 0.00s");
  // A reason no step line gave is said on the last line.
  fixture g(progress_mode::plain);
  g.send(test::make_event(event_kind::recipe_start));
  run.error = "the budget is reached";
  g.send(end);
  CHECK(g.lines().back() == "arun: 'demo' failed in 0.00s: the budget is reached");
}

TEST_CASE("the live status line shows spend against the budget, and a small spend never as $0.00") {
  fixture f(progress_mode::live, 200);
  f.send(f.recipe_start(1));
  auto start = test::step_start("ask[0]");
  start.step_type = "agent";
  f.send(start);
  // A correction round's call spent: the status line knows before the instance ends.
  auto retry = test::make_event(event_kind::step_retry, "ask[0]");
  retry.step_type = "agent";
  retry.spend = event::spend_state{0.0041, true, 1200, 0.01, std::nullopt};
  f.send(retry);
  f.now += 2s;
  f.printer.tick();
  auto status = visible_status(f.file.text());
  CHECK(status.find("$0.0041/$0.0100") != std::string::npos);
  CHECK(status.find("1200 tok") != std::string::npos);

  retry.spend = event::spend_state{0.000031, true, 12, std::nullopt, 100000};
  f.send(retry);
  f.now += 2s;
  f.printer.tick();
  status = visible_status(f.file.text());
  CHECK(status.find("$0.000031") != std::string::npos);
  CHECK(status.find("$0.00 ") == std::string::npos);
  CHECK(status.find("12/100k tok") != std::string::npos);
}

TEST_CASE("spend texts: dollars with the precision their size needs") {
  CHECK(format_usd(0) == "$0.00");
  CHECK(format_usd(0.0041) == "$0.0041");
  CHECK(format_usd(0.000031) == "$0.000031");
  CHECK(format_usd(0.0000004) == "$0.00000040");
  CHECK(format_usd(1) == "$1.0000");
  CHECK(format_usd(12.5) == "$12.50");
  CHECK(io::spend_texts({0, false, 0, std::nullopt, std::nullopt}).empty());
  CHECK(io::spend_texts({0, false, 0, 0.5, std::nullopt}) == std::vector<std::string>{"$0.00/$0.5000"});
  CHECK(io::spend_texts({0, false, 500, std::nullopt, std::nullopt}) == std::vector<std::string>{"500 tok"});
}
