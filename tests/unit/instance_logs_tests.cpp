// Per-instance logs in a session (session/instance_logs.hpp): file names for instance ids and
// back, one file per stream, retries marked, the bound and its rotation, a resume starting the
// logs afresh, hooks apart, and a write error reported without throwing.
#include <catch2/catch.hpp>

#include "event_samples.hpp"
#include "session/instance_logs.hpp"
#include "temp_dir.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace arun;
using namespace arun::io;
using arun::test::make_event;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

event output(const std::string& step, output_stream stream, std::string_view line, std::string type = "bash") {
  auto e = make_event(event_kind::step_output, step, std::move(type));
  e.stream = stream;
  e.line = line;
  return e;
}

struct logs_fixture {
  arun::test::temp_dir dir{"arun-logs"};
  fs::path logs = dir.root / "logs";
  std::shared_ptr<background_writer> writer = std::make_shared<background_writer>();
};

}  // namespace

TEST_CASE("instance log paths nest iterations as directories and decode back to the id", "[logs]") {
  CHECK(instance_log_path("build", output_stream::out) == "build.out");
  CHECK(instance_log_path("fan[3]/review", output_stream::err) == "fan[3]/review.err");
  CHECK(instance_log_path("call/fan[10]/x", output_stream::out, true) == "call/fan[10]/x@hooks.out");
  // Bytes outside the id alphabet, '%' and dot-only components cannot escape or collide.
  CHECK(instance_log_path("..", output_stream::out) == "%2E%2E.out");
  CHECK(instance_log_path("a b%c@d", output_stream::out) == "a%20b%25c%40d.out");
  for (const std::string id : {"build", "fan[3]/review", "call/fan[10]/x", "..", "a b%c@d", "x.hooks"}) {
    for (const bool hooks : {false, true}) {
      const auto path = instance_log_path(id, output_stream::err, hooks);
      const auto back = parse_instance_log_path(path);
      REQUIRE(back);
      CHECK(back->instance == id);
      CHECK(back->hooks == hooks);
      CHECK(back->stream == output_stream::err);
      CHECK_FALSE(back->rotated);
      const auto rotated = parse_instance_log_path(path + ".1");
      REQUIRE(rotated);
      CHECK(rotated->rotated);
      CHECK(rotated->instance == id);
    }
  }
  CHECK_FALSE(parse_instance_log_path("notes.txt"));
  CHECK_FALSE(parse_instance_log_path(".out"));
  CHECK_FALSE(parse_instance_log_path("bad%2.out"));
}

TEST_CASE("every instance's stdout and stderr go to files of their own, private to the owner", "[logs]") {
  logs_fixture f;
  {
    instance_logs logs(f.logs.string(), 1 << 20, f.writer);
    logs.on_event(output("fan[0]", output_stream::out, "zero out"));
    logs.on_event(output("fan[1]", output_stream::err, "one err"));
    logs.on_event(output("fan[1]", output_stream::out, "one out"));
    auto cut = output("fan[1]", output_stream::err, "long");
    cut.line_truncated = true;
    logs.on_event(cut);
    logs.on_event(arun::test::step_end(arun::test::finished("fan[1]", step_status::failed, "exit code 1")));
    // Stderr first: the reason a step failed is there.
    CHECK(logs.files_of("fan[1]") == std::vector<std::string>{(f.logs / "fan[1].err").string(),
                                                               (f.logs / "fan[1].out").string()});
    CHECK(logs.files_of("fan[0]") == std::vector<std::string>{(f.logs / "fan[0].out").string()});
    CHECK(logs.files_of("fan[2]").empty());
  }
  f.writer->drain();
  CHECK(read_file(f.logs / "fan[0].out") == "zero out\n");
  CHECK(read_file(f.logs / "fan[1].out") == "one out\n");
  CHECK(read_file(f.logs / "fan[1].err") == "one err\nlong [arun: line cut at 4 bytes]\n");
  struct stat st{};
  REQUIRE(::stat((f.logs / "fan[1].err").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(f.logs.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("a retried instance's log marks where each attempt starts", "[logs]") {
  logs_fixture f;
  {
    instance_logs logs(f.logs.string(), 1 << 20, f.writer);
    logs.on_event(output("flaky", output_stream::out, "try 1"));
    auto retry = make_event(event_kind::step_retry, "flaky");
    retry.attempt = 1;
    retry.message = "exit code 1\nmore detail";
    logs.on_event(retry);
    logs.on_event(output("flaky", output_stream::out, "try 2"));
  }
  f.writer->drain();
  CHECK(read_file(f.logs / "flaky.out") == "try 1\n--- arun: attempt 1 failed: exit code 1; attempt 2 follows ---\ntry 2\n");
}

TEST_CASE("a log past its bound is rotated: the newest output is kept, the disk use bounded", "[logs]") {
  logs_fixture f;
  {
    instance_logs logs(f.logs.string(), 100, f.writer);
    for (int i = 0; i < 1000; ++i) {
      logs.on_event(output("loud", output_stream::out, "line " + std::to_string(i)));
      if (i % 7 == 0) logs.flush();  // hand-overs of every size
    }
  }
  f.writer->drain();
  const auto current = read_file(f.logs / "loud.out");
  const auto rotated = read_file(f.logs / "loud.out.1");
  CHECK(current.size() <= 100);
  CHECK(rotated.size() <= 100);
  CHECK(current.ends_with("line 999\n"));
  // Whole lines, and the rotated file holds what came just before.
  CHECK(current.front() == 'l');
  CHECK(rotated.ends_with("\n"));
  const auto first_current = std::stoi(current.substr(5));
  const auto last_rotated = std::stoi(rotated.substr(rotated.rfind("line ", rotated.size() - 2) + 5));
  CHECK(last_rotated == first_current - 1);
}

TEST_CASE("a log is started afresh by the next run of its instance (resume) and appended to within a run", "[logs]") {
  logs_fixture f;
  {
    instance_logs logs(f.logs.string(), 100, f.writer);
    for (int i = 0; i < 50; ++i) {
      logs.on_event(output("s", output_stream::out, "first run " + std::to_string(i)));
      logs.flush();
    }
  }
  f.writer->drain();
  REQUIRE(fs::exists(f.logs / "s.out.1"));
  {
    instance_logs logs(f.logs.string(), 100, f.writer);
    logs.on_event(output("s", output_stream::out, "second run"));
    logs.on_event(arun::test::step_end(arun::test::finished("s", step_status::completed)));
    // A hook ending after the step reopens the hooks' log, appending.
    logs.on_event(output("s", output_stream::out, "pre", "hook"));
    logs.on_event(arun::test::step_end(arun::test::finished("s", step_status::completed)));
    logs.on_event(output("s", output_stream::out, "post", "hook"));
  }
  f.writer->drain();
  CHECK(read_file(f.logs / "s.out") == "second run\n");
  CHECK_FALSE(fs::exists(f.logs / "s.out.1"));
  CHECK(read_file(f.logs / "s@hooks.out") == "pre\npost\n");
}

TEST_CASE("a log that cannot be written is reported, and the run's events go on", "[logs]") {
  logs_fixture f;
  std::ofstream(f.dir.root / "file") << "x";
  instance_logs logs((f.dir.root / "file" / "logs").string(), 100, f.writer);
  REQUIRE_NOTHROW(logs.on_event(output("s", output_stream::out, "lost")));
  logs.flush();
  f.writer->drain();
  CHECK(logs.error().find("cannot write log '") == 0);
  CHECK(logs.error().find("s.out") != std::string::npos);
}

TEST_CASE("the line filter sees every line and marker before it is stored", "[logs]") {
  logs_fixture f;
  {
    instance_logs logs(f.logs.string(), 1 << 20, f.writer, [](std::string_view line) {
      std::string out(line);
      for (auto pos = out.find("hunter2"); pos != std::string::npos; pos = out.find("hunter2")) out.replace(pos, 7, "***");
      return out;
    });
    logs.on_event(output("s", output_stream::out, "password is hunter2"));
    auto retry = make_event(event_kind::step_retry, "s");
    retry.attempt = 1;
    retry.message = "bad hunter2";
    logs.on_event(retry);
  }
  f.writer->drain();
  CHECK(read_file(f.logs / "s.out") == "password is ***\n--- arun: attempt 1 failed: bad ***; attempt 2 follows ---\n");
}

TEST_CASE("a new session's logs are made in nested directories, private, each made once", "[logs]") {
  logs_fixture f;
  {
    instance_logs logs(f.logs.string(), 1 << 20, f.writer, nullptr, /*fresh=*/true);
    for (int i = 0; i < 3; ++i) {
      const auto id = "fan[" + std::to_string(i) + "]/ask";
      logs.on_event(output(id, output_stream::out, "reply " + std::to_string(i)));
      logs.on_event(arun::test::step_end(arun::test::finished(id, step_status::completed)));
    }
    // A line after the instance ended (a post_step hook's) appends to its file.
    logs.on_event(output("fan[0]/ask", output_stream::out, "late"));
  }
  f.writer->drain();
  CHECK(read_file(f.logs / "fan[0]" / "ask.out") == "reply 0\nlate\n");
  CHECK(read_file(f.logs / "fan[2]" / "ask.out") == "reply 2\n");
  struct stat st{};
  REQUIRE(::stat((f.logs / "fan[1]").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat((f.logs / "fan[1]" / "ask.out").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}
