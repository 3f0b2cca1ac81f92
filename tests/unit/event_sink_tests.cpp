// Events as JSON lines (docs/reference/formats.md, "Events"): the shape of each kind, the JSONL
// file sink, audit paths and the listener fanout.
#include <catch2/catch.hpp>

#include "output/event_json.hpp"
#include "temp_dir.hpp"
#include "event_samples.hpp"
#include "output/jsonl_sink.hpp"
#include "output/listener_fanout.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace arun;
using namespace arun::io;
using namespace std::chrono_literals;

namespace {

struct temp_dir : arun::test::temp_dir {
  temp_dir() : arun::test::temp_dir("arun-events") {}
};

std::set<std::string> keys_of(const boost::json::object& o) {
  std::set<std::string> keys;
  for (const auto& kv : o) keys.insert(std::string(kv.key()));
  return keys;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::chrono::system_clock::time_point at_2026_11_21_134501(std::chrono::milliseconds ms) {
  using namespace std::chrono;
  return sys_days{year{2026} / November / day{21}} + 13h + 45min + 1s + ms;
}

const std::set<std::string> common_keys = {"ts", "event", "session_id"};

std::set<std::string> with_common(std::set<std::string> keys) {
  keys.insert(common_keys.begin(), common_keys.end());
  return keys;
}

}  // namespace

TEST_CASE("timestamps are RFC 3339 UTC with milliseconds") {
  CHECK(format_rfc3339_ms(at_2026_11_21_134501(123ms)) == "2026-11-21T13:45:01.123Z");
  CHECK(format_rfc3339_ms(at_2026_11_21_134501(0ms)) == "2026-11-21T13:45:01.000Z");
  // Truncated, never rounded up into the next second.
  CHECK(format_rfc3339_ms(at_2026_11_21_134501(999ms) + 900us) == "2026-11-21T13:45:01.999Z");
  const std::regex shape(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  CHECK(std::regex_match(format_rfc3339_ms(std::chrono::system_clock::now()), shape));
  // Calendar corners: a leap day, the last millisecond of a year, and before 1970.
  using std::chrono::sys_days;
  using namespace std::chrono_literals;
  CHECK(format_rfc3339_ms(sys_days{2024y / 2 / 29} + 23h + 59min + 59s + 999ms) == "2024-02-29T23:59:59.999Z");
  CHECK(format_rfc3339_ms(sys_days{2026y / 12 / 31} + 23h + 59min + 59s + 999ms) == "2026-12-31T23:59:59.999Z");
  CHECK(format_rfc3339_ms(sys_days{1970y / 1 / 1} - 500ms) == "1969-12-31T23:59:59.500Z");
  // Each timestamp round-trips through the parser.
  const auto t = sys_days{2026y / 3 / 1} + 7h + 8min + 9s + 10ms;
  CHECK(parse_rfc3339_ms(format_rfc3339_ms(t)) == t);
}

TEST_CASE("every event object has ts, event and session_id") {
  auto e = test::make_event(event_kind::recipe_start);
  e.ts = at_2026_11_21_134501(5ms);
  const auto o = event_to_json(e);
  CHECK(keys_of(o) == with_common({"recipe"}));
  CHECK(o.at("ts") == "2026-11-21T13:45:01.005Z");
  CHECK(o.at("event") == "recipe_start");
  CHECK(o.at("session_id") == "20261121-134501-3f9a2c");
  CHECK(o.at("recipe") == "demo");
  e.items = 7;  // its top-level steps, for "[3/7]"
  CHECK(event_to_json(e).at("steps") == 7);
}

TEST_CASE("recipe_end carries the run's status, success, duration and error") {
  run_result run;
  run.status = run_status::failed;
  run.duration = 1500ms;
  run.error = "step build failed";
  auto e = test::make_event(event_kind::recipe_end);
  e.run = &run;
  const auto o = event_to_json(e);
  CHECK(keys_of(o) == with_common({"recipe", "status", "success", "duration", "error"}));
  CHECK(o.at("status") == "failed");
  CHECK(o.at("success") == false);
  CHECK(o.at("error") == "step build failed");
  const auto text = to_compact_json(o);
  CHECK(text.find(R"("duration":1.5,)") != std::string::npos);

  run.status = run_status::completed;
  run.duration = 2s;
  run.error.clear();
  const auto ok = event_to_json(e);
  CHECK(ok.at("success") == true);
  CHECK(ok.at("error").is_null());
  CHECK(to_compact_json(ok).find(R"("duration":2.0)") != std::string::npos);
}

TEST_CASE("step_start has step and type, attempt only when set, items only for foreach") {
  auto e = test::step_start("build");
  CHECK(keys_of(event_to_json(e)) == with_common({"step", "step_id", "type"}));
  e.attempt = 2;
  const auto retried = event_to_json(e);
  CHECK(keys_of(retried) == with_common({"step", "step_id", "type", "attempt"}));
  CHECK(retried.at("attempt") == 2);
  CHECK(retried.at("type") == "bash");

  const auto loop = event_to_json(test::loop_start("fan", 1000));
  CHECK(keys_of(loop) == with_common({"step", "step_id", "type", "items"}));
  CHECK(loop.at("items") == 1000);
  CHECK(loop.at("type") == "loop");
}

TEST_CASE("step_output has stream, line and truncated") {
  auto e = test::make_event(event_kind::step_output, "fan[3]/child");
  const std::string text = "hello \"world\"";
  e.line = text;
  auto o = event_to_json(e);
  CHECK(keys_of(o) == with_common({"step", "step_id", "type", "stream", "line", "truncated"}));
  CHECK(o.at("step") == "fan[3]/child");
  CHECK(o.at("step_id") == "fan[3]/child");
  CHECK(o.at("stream") == "stdout");
  CHECK(o.at("line") == "hello \"world\"");
  CHECK(o.at("truncated") == false);
  e.stream = output_stream::err;
  e.line_truncated = true;
  o = event_to_json(e);
  CHECK(o.at("stream") == "stderr");
  CHECK(o.at("truncated") == true);
}

TEST_CASE("invalid UTF-8 in output lines becomes U+FFFD so the line stays valid JSON text") {
  auto e = test::make_event(event_kind::step_output, "dump");
  const std::string bytes = "ok \xff\xfe caf\xc3\xa9 \xe2\x82";  // two bad bytes, é, a cut €
  e.line = bytes;
  CHECK(event_to_json(e).at("line") == "ok \xEF\xBF\xBD\xEF\xBF\xBD caf\xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(sanitize_utf8("plain \xf0\x9f\x99\x82 text") == "plain \xf0\x9f\x99\x82 text");
  CHECK(sanitize_utf8("\xed\xa0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a UTF-16 surrogate
}

TEST_CASE("step_heartbeat has elapsed seconds and step_retry has attempt, delay and error") {
  auto beat = test::make_event(event_kind::step_heartbeat, "slow", "agent");
  beat.elapsed = 60s;
  const auto b = event_to_json(beat);
  CHECK(keys_of(b) == with_common({"step", "step_id", "type", "elapsed"}));
  CHECK(to_compact_json(b).find(R"("elapsed":60.0)") != std::string::npos);

  auto retry = test::make_event(event_kind::step_retry, "flaky");
  retry.attempt = 1;
  retry.delay = 2500ms;
  retry.message = "exit code 1";
  const auto r = event_to_json(retry);
  CHECK(keys_of(r) == with_common({"step", "step_id", "type", "attempt", "delay", "error"}));
  CHECK(r.at("attempt") == 1);
  CHECK(r.at("delay") == 2.5);
  CHECK(r.at("error") == "exit code 1");
}

TEST_CASE("step_end carries the instance's outcome, error null when empty") {
  auto r = test::finished("build", step_status::completed);
  r.duration = 250ms;
  const auto ok = event_to_json(test::step_end(r));
  CHECK(keys_of(ok) == with_common({"step", "step_id", "type", "status", "duration", "attempt", "exit_code", "signal",
                                    "timed_out", "error"}));
  CHECK(ok.at("status") == "completed");
  CHECK(ok.at("duration") == 0.25);
  CHECK(ok.at("attempt") == 1);
  CHECK(ok.at("exit_code") == 0);
  CHECK(ok.at("signal").is_null());
  CHECK(ok.at("timed_out") == false);
  CHECK(ok.at("error").is_null());

  auto killed = test::finished("slow", step_status::failed, "timed out after 5s");
  killed.exit_code.reset();
  killed.signal = 9;
  killed.timed_out = true;
  killed.attempts = 3;
  const auto bad = event_to_json(test::step_end(killed));
  CHECK(bad.at("exit_code").is_null());
  CHECK(bad.at("signal") == 9);
  CHECK(bad.at("timed_out") == true);
  CHECK(bad.at("attempt") == 3);
  CHECK(bad.at("error") == "timed out after 5s");
}

TEST_CASE("step_end of a loop has iterations counts") {
  auto r = test::finished("fan", step_status::failed, "1 iteration failed");
  r.iterations.emplace();
  r.iterations->total = 1000;
  r.iterations->completed = 990;
  r.iterations->failed = 1;
  r.iterations->skipped = 9;
  const auto o = event_to_json(test::step_end(r, "loop"));
  REQUIRE(o.contains("iterations"));
  CHECK(o.at("iterations") == boost::json::parse(R"({"total":1000,"completed":990,"failed":1,"skipped":9})"));
}

TEST_CASE("approval_requested has the prompt and warnings the message") {
  auto gate = test::make_event(event_kind::approval_requested, "deploy", "gate");
  gate.message = "Deploy to prod?";
  const auto g = event_to_json(gate);
  CHECK(keys_of(g) == with_common({"step", "step_id", "type", "prompt"}));
  CHECK(g.at("prompt") == "Deploy to prod?");

  auto warn = test::make_event(event_kind::warning, "fan[2]/child");
  warn.message = "reference 'x' has no value";
  CHECK(keys_of(event_to_json(warn)) == with_common({"step", "step_id", "type", "message"}));
  warn.step.clear();
  warn.step_type.clear();
  CHECK(keys_of(event_to_json(warn)) == with_common({"message"}));
}

TEST_CASE("the events file is truncated at open and gets one JSON object per line") {
  temp_dir dir;
  const auto path = dir.root / "events.jsonl";
  std::ofstream(path) << "stale line from an earlier run\n";
  auto opened = jsonl_event_sink::open(path.string());
  REQUIRE(opened.sink);
  CHECK(opened.error.empty());
  CHECK(read_all(path).empty());

  opened.sink->on_event(test::make_event(event_kind::recipe_start));
  auto out = test::make_event(event_kind::step_output, "build");
  const std::string text = "a line with \"quotes\"\tand a tab";
  out.line = text;
  opened.sink->on_event(out);
  auto warn = test::make_event(event_kind::warning, "build");
  warn.message = "two\nlines";
  opened.sink->on_event(warn);
  CHECK(opened.sink->lines_written() == 3);
  CHECK_FALSE(opened.sink->failed());

  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 3);
  CHECK(read_all(path).back() == '\n');
  CHECK(boost::json::parse(lines[0]).at("event") == "recipe_start");
  CHECK(std::string(boost::json::parse(lines[1]).at("line").as_string()) == text);
  CHECK(boost::json::parse(lines[2]).at("message") == "two\nlines");
  CHECK(lines[0].find(": ") == std::string::npos);  // compact
}

TEST_CASE("the events file keeps bounded output per step instance and counts what it left out") {
  temp_dir dir;
  const auto path = dir.root / "events.jsonl";
  event_output_limits limits;
  limits.max_lines = 3;
  limits.max_bytes = 100;
  limits.max_line_bytes = 10;
  auto opened = jsonl_event_sink::open(path.string(), true, limits);
  REQUIRE(opened.sink);
  const std::string long_line(25, 'x');
  for (int i = 0; i < 5; ++i) {
    for (const auto* step : {"a", "b"}) {
      auto out = test::make_event(event_kind::step_output, step);
      out.line = i == 0 ? std::string_view(long_line) : std::string_view("short");
      opened.sink->on_event(out);
    }
  }
  for (const auto* step : {"a", "b"}) opened.sink->on_event(test::make_event(event_kind::step_end, step));
  // A new instance of the same id (a resume, a retry of the loop) starts a fresh count.
  auto again = test::make_event(event_kind::step_output, "a");
  again.line = "later";
  opened.sink->on_event(again);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 3 + 3 + 2 + 2 + 1);
  const auto first = boost::json::parse(lines[0]).as_object();
  CHECK(first.at("line") == "xxxxxxxxxx");
  CHECK(first.at("truncated") == true);
  std::vector<std::string> warnings;
  for (const auto& line : lines) {
    const auto o = boost::json::parse(line).as_object();
    if (o.at("event") == "warning") warnings.emplace_back(o.at("message").as_string());
  }
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] == "2 output lines (10 bytes) left out of the events: past 3 lines or 100 bytes per step");
  CHECK(boost::json::parse(lines[6]).at("event") == "warning");  // before a's step_end
  CHECK(boost::json::parse(lines[7]).at("event") == "step_end");
  CHECK(boost::json::parse(lines.back()).at("line") == "later");
}

TEST_CASE("the events file is created 0600 (it holds step output) and closed on exec") {
  temp_dir dir;
  const auto path = dir.root / "new.jsonl";
  const mode_t old_mask = ::umask(022);
  auto opened = jsonl_event_sink::open(path.string());
  ::umask(old_mask);
  REQUIRE(opened.sink);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  int flags = -1;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(entry.path(), ec) == path) flags = ::fcntl(std::stoi(entry.path().filename().string()), F_GETFD);
  }
  REQUIRE(flags != -1);
  CHECK((flags & FD_CLOEXEC) != 0);
}

TEST_CASE("an events file that cannot be opened is a clear error, not an exception") {
  temp_dir dir;
  const auto path = (dir.root / "missing" / "events.jsonl").string();
  const auto opened = jsonl_event_sink::open(path);
  CHECK_FALSE(opened.sink);
  CHECK(opened.error == "cannot open events file '" + path + "': No such file or directory");
}

TEST_CASE("a failed write is remembered once and stops the sink without throwing") {
  auto opened = jsonl_event_sink::open("/dev/full");
  REQUIRE(opened.sink);
  auto& sink = *opened.sink;
  sink.on_event(test::make_event(event_kind::recipe_start));
  CHECK(sink.failed());
  CHECK(sink.error() == "cannot write events file '/dev/full': No space left on device");
  sink.on_event(test::make_event(event_kind::recipe_end));
  CHECK(sink.lines_written() == 0);
  CHECK(sink.error() == "cannot write events file '/dev/full': No space left on device");
}

TEST_CASE("audit files are DIR/recipe-session.jsonl with unsafe name characters replaced") {
  CHECK(audit_file_path("/var/log/arun", "build-all", "20261121-134501-3f9a2c") ==
        "/var/log/arun/build-all-20261121-134501-3f9a2c.jsonl");
  CHECK(audit_file_path("audit/", "my recipe/../x", "S") == "audit/my_recipe_.._x-S.jsonl");
  CHECK(audit_file_path("a", ".hidden", "S") == "a/_hidden-S.jsonl");
  CHECK(audit_file_path("a", "", "S") == "a/recipe-S.jsonl");
}

TEST_CASE("the audit sink creates its directory with parents") {
  temp_dir dir;
  const auto audit = dir.root / "deep" / "er";
  auto opened = jsonl_event_sink::open_audit(audit.string(), "demo", "S1");
  REQUIRE(opened.sink);
  CHECK(opened.sink->path() == (audit / "demo-S1.jsonl").string());
  opened.sink->on_event(test::make_event(event_kind::recipe_start));
  CHECK(lines_of(audit / "demo-S1.jsonl").size() == 1);

  std::ofstream(dir.root / "plain-file") << "x";
  const auto blocked = jsonl_event_sink::open_audit((dir.root / "plain-file" / "sub").string(), "demo", "S1");
  CHECK_FALSE(blocked.sink);
  CHECK(blocked.error.rfind("cannot create audit directory '" + (dir.root / "plain-file" / "sub").string() + "': ", 0) == 0);
}

TEST_CASE("the fanout forwards every event to every listener in order and skips null") {
  struct recorder final : event_listener {
    std::vector<std::string>* log;
    std::string name;
    recorder(std::vector<std::string>* l, std::string n) : log(l), name(std::move(n)) {}
    void on_event(const event& e) noexcept override { log->push_back(name + ":" + std::string(to_string(e.kind))); }
  };
  std::vector<std::string> log;
  recorder a(&log, "a");
  recorder b(&log, "b");
  listener_fanout fanout({&a, nullptr});
  fanout.add(nullptr);
  fanout.add(&b);
  CHECK(fanout.size() == 2);
  fanout.on_event(test::make_event(event_kind::recipe_start));
  fanout.on_event(test::make_event(event_kind::recipe_end));
  CHECK(log == std::vector<std::string>{"a:recipe_start", "b:recipe_start", "a:recipe_end", "b:recipe_end"});
  CHECK(listener_fanout().empty());
}
