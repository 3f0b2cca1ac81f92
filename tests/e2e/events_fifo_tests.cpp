// `--events FIFO` (docs/running.md, "Events"): a FIFO never holds arun. Without a reader the
// open is refused after a short wait; a reader that stops reading holds a finished run only
// until a stop: SIGTERM or a second Ctrl-C ends it within the promised 2 s; a reader that
// reads gets every event.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// One step printing 2,000 lines of 100 bytes: about 200 KB of events, far past a pipe's
// 64 KiB; then `done` appears.
constexpr const char* chatty_recipe =
    "name: chatty\nsteps:\n  - id: talk\n    command: for i in $(seq 2000); do printf '%0100d\\n' $i; done\n"
    "  - id: end\n    command: touch done\n";

bool wait_for_file(const fs::path& file, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!fs::exists(file)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// arun with --events FIFO whose reader opened it and never reads: the run's steps end, and
// arun is then held by the full FIFO until `signals` arrive. Returns arun's exit status and
// how long it took to exit after the last signal.
struct held_run_end {
  std::optional<int> status;
  std::chrono::steady_clock::duration after_last_signal{};
  bool held = false;  ///< arun was still there, held by the FIFO, before the signals
  std::string err;
};

held_run_end stop_held_run(const std::vector<int>& signals) {
  arun::test::temp_dir dir;
  const auto fifo = dir.root / "events";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(dir.root / "chatty.yaml") << chatty_recipe;
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // opened, never read
  REQUIRE(reader >= 0);
  held_run_end end;
  {
    arun::test::background_arun arun({"-q", "--session-dir", (dir.root / "sessions").string(), "--events",
                                      fifo.string(), "-C", dir.root.string(), (dir.root / "chatty.yaml").string()},
                                     dir.root);
    // Past the steps' end the FIFO is full: the run is at its end, waiting for its writes.
    REQUIRE(wait_for_file(dir.root / "done", 30s));
    std::this_thread::sleep_for(1s);
    int status = 0;
    end.held = ::waitpid(arun.pid, &status, WNOHANG) == 0;
    for (const int sig : signals) {
      ::kill(arun.pid, sig);
      std::this_thread::sleep_for(200ms);
    }
    const auto sent = std::chrono::steady_clock::now();
    end.status = arun.wait_exit(20s);
    end.after_last_signal = std::chrono::steady_clock::now() - sent;
    end.err = arun::test::read_text(arun.err);
  }
  ::close(reader);
  return end;
}

}  // namespace

TEST_CASE("events FIFO: a finished run held by a reader that stopped reading ends at a second Ctrl-C") {
  const auto end = stop_held_run({SIGINT, SIGINT});
  INFO(end.err);
  CHECK(end.held);
  CHECK(end.status == 130);
  CHECK(end.after_last_signal < 4s);  // the promise: 2 s after the second Ctrl-C
}

TEST_CASE("events FIFO: a finished run held by a reader that stopped reading ends at SIGTERM, its result printed") {
  const auto end = stop_held_run({SIGTERM});
  INFO(end.err);
  CHECK(end.held);
  CHECK(end.status == 143);
  CHECK(end.after_last_signal < 5s);  // 2 s for the writes, then they are abandoned
  CHECK(end.err.find("its reader stopped reading") != std::string::npos);
}

TEST_CASE("events FIFO: nobody reading is refused after a short wait, before any step runs") {
  arun::test::temp_dir dir;
  const auto fifo = dir.root / "events";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(dir.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: touch ran\n";
  const auto started = std::chrono::steady_clock::now();
  const auto r = arun::test::run_arun({"-q", "--session-dir", (dir.root / "sessions").string(), "--events",
                                       fifo.string(), "r.yaml"},
                                      dir.root.string(), 30s);
  CHECK(std::chrono::steady_clock::now() - started < 15s);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cannot open events file '" + fifo.string() + "': it is a FIFO that nobody reads") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir.root / "ran"));
}

TEST_CASE("events FIFO: a Ctrl-C ends the wait for a reader at once, and the session keeps its state") {
  arun::test::temp_dir dir;
  const auto fifo = dir.root / "events";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(dir.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: touch ran\n";
  const auto sessions = dir.root / "sessions";
  arun::test::background_arun arun({"-q", "--session-dir", sessions.string(), "--events", fifo.string(), "-C",
                                    dir.root.string(), (dir.root / "r.yaml").string()},
                                   dir.root);
  // arun waits for the reader once the session exists (and the stop signals are held).
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!(fs::is_directory(sessions) && !fs::is_empty(sessions)) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(300ms);
  ::kill(arun.pid, SIGINT);
  const auto sent = std::chrono::steady_clock::now();
  const auto status = arun.wait_exit(20s);
  CHECK(std::chrono::steady_clock::now() - sent < 3s);  // not the 5 s wait for a reader
  REQUIRE(status);
  CHECK(*status == 2);
  CHECK(arun::test::read_text(arun.err).find("arun was stopped while waiting for its reader") != std::string::npos);
  REQUIRE(fs::is_directory(sessions));
  const auto session = fs::directory_iterator(sessions)->path();
  CHECK(fs::exists(session / "state.json"));
  CHECK_FALSE(fs::exists(dir.root / "ran"));
}

TEST_CASE("events FIFO: a reader that reads gets every event") {
  arun::test::temp_dir dir;
  const auto fifo = dir.root / "events";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(dir.root / "chatty.yaml") << chatty_recipe;
  std::string received;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);  // waits for arun, as `cat FIFO` does
    if (fd < 0) return;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
      received.append(buf, static_cast<std::size_t>(n));
      std::this_thread::sleep_for(1ms);  // a slow reader: arun waits for it
    }
    ::close(fd);
  });
  const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                       "--events", fifo.string(), "chatty.yaml"},
                                      dir.root.string(), 60s);
  reader.join();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The same lines as the session's own events file, in order.
  const auto id = std::string(arun::test::result_json(r).at("session_id").as_string());
  const auto session_events = arun::test::read_text(dir.root / "sessions" / id / "events.jsonl");
  CHECK(received.size() > 100'000);
  CHECK(received.find("\"recipe_end\"") != std::string::npos);
  CHECK(std::count(received.begin(), received.end(), '\n') == std::count(session_events.begin(), session_events.end(), '\n'));
}
