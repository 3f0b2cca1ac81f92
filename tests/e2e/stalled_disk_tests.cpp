// A file arun writes that stops taking data — a frozen filesystem, a hung NFS server, here a
// FIFO nobody reads — must not stall the run: the writes wait on their own thread while
// steps keep running and timeouts keep their latency; once the file takes data again every
// event lands, in order.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using arun::test::background_arun;
using arun::test::temp_dir;

namespace {

// Reads `fd` until EOF or `limit`; what was read.
std::string read_until_eof(int fd, std::chrono::seconds limit) {
  std::string all;
  const auto until = std::chrono::steady_clock::now() + limit;
  char buf[65536];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const auto n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n > 0) all.append(buf, static_cast<std::size_t>(n));
  }
  return all;
}

double read_seconds(const fs::path& file) { return std::stod(arun::test::read_text(file)); }

}  // namespace

TEST_CASE("stalled disk: an events file that takes no data does not hold back the steps or their timeouts") {
  temp_dir d("arun-stall");
  const auto fifo = d.root / "events.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A reader that does not read: arun's writes stop once the pipe's 64 KiB buffer is full.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  const auto recipe = d.write("stall.yaml", R"(name: stall
steps:
  - id: flood
    command: seq 1 3000
  - id: slow
    timeout: 1
    on_error: continue
    command: date +%s.%N > slow-started; sleep 30
  - id: after
    command: date +%s.%N > after-ran
)");
  background_arun arun({recipe, "-q", "--output-format", "json", "--events", fifo.string(), "-C",
                        d.root.string(), "--session-dir", (d.root / "sessions").string()},
                       d.root);
  // The flood's 3,000 output events are far more than the FIFO holds; with the writes on the
  // event loop nothing after them would run until someone reads.
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (!fs::exists(d.root / "after-ran") && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
  REQUIRE(fs::exists(d.root / "after-ran"));
  std::this_thread::sleep_for(50ms);  // `date` has written its line
  const double timeout_latency = read_seconds(d.root / "after-ran") - read_seconds(d.root / "slow-started");
  CHECK(timeout_latency < 2.5);  // the 1 s timeout, its SIGTERM, the next step's start
  // The timer starts at the spawn, `slow-started` a shell's start-up later: a few ms under 1 s.
  CHECK(timeout_latency >= 0.9);

  // Now the file takes data: everything arrives, and arun finishes.
  const auto events = read_until_eof(reader, 60s);
  ::close(reader);
  const auto code = arun.wait_exit(30s);
  REQUIRE(code);
  CHECK(*code == 0);
  CHECK(events.find(R"("event":"recipe_end")") != std::string::npos);
  CHECK(events.find(R"("line":"3000")") == std::string::npos);  // bounded: 1,000 lines per step
  CHECK(events.find(R"("line":"1000")") != std::string::npos);
  CHECK(events.find(R"("step":"after")") > events.find(R"("step":"slow")"));
  CHECK(arun::test::leftover_processes().empty());
}
