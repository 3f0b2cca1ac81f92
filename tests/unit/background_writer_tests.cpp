// The background writer (src/io/files/background_writer.hpp): file writes off the event loop, in
// order, bounded by queued bytes; and the session store and event files writing through it
// while the writer is held as a frozen filesystem would hold it.
#include <catch2/catch.hpp>

#include "files/background_writer.hpp"
#include "output/jsonl_sink.hpp"
#include "session/session_store.hpp"
#include "temp_dir.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

using namespace arun;
using namespace arun::io;
using namespace std::chrono_literals;
using arun::test::temp_dir;

namespace {

std::size_t lines_in(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("background writer: jobs run in the order they were queued, and drain waits for them") {
  background_writer writer;
  std::mutex m;
  std::vector<int> ran;
  for (int i = 0; i < 100; ++i)
    writer.post(10, [&, i] {
      std::lock_guard lock(m);
      ran.push_back(i);
    });
  writer.drain();
  std::lock_guard lock(m);
  REQUIRE(ran.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(ran[static_cast<std::size_t>(i)] == i);
  CHECK(writer.queued_bytes() == 0);
}

TEST_CASE("background writer: while the writer is held, queueing under the bound returns at once") {
  background_writer writer(1000);
  writer.pause();
  std::atomic<int> ran{0};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) writer.post(50, [&] { ++ran; });
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK(writer.queued_bytes() == 500);
  CHECK_FALSE(writer.drain_for(100ms));
  CHECK(ran == 0);
  writer.resume();
  CHECK(writer.drain_for(10s));
  CHECK(ran == 10);
}

TEST_CASE("background writer: past the bound the producer waits for room") {
  background_writer writer(100);
  writer.pause();
  writer.post(60, [] {});
  std::atomic<bool> queued{false};
  std::thread producer([&] {
    writer.post(60, [] {});
    queued = true;
  });
  std::this_thread::sleep_for(200ms);
  CHECK_FALSE(queued);  // 120 bytes would exceed the bound of 100
  writer.resume();
  producer.join();
  CHECK(queued);
  writer.drain();
  CHECK(writer.queued_bytes() == 0);
}

TEST_CASE("background writer: a job larger than the bound still runs, alone") {
  background_writer writer(10);
  std::atomic<bool> ran{false};
  writer.post(1000, [&] { ran = true; });
  writer.drain();
  CHECK(ran);
}

TEST_CASE("background writer: destroying it runs what is still queued, even when held") {
  std::atomic<int> ran{0};
  {
    background_writer writer;
    writer.pause();
    for (int i = 0; i < 5; ++i) writer.post(1, [&] { ++ran; });
  }
  CHECK(ran == 5);
}

TEST_CASE("background writer: journal records and events queue while the disk is held, and land in order") {
  temp_dir d("arun-writer");
  auto created = session_store::create(d.root.string(), "held");
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(created));
  auto store = std::move(std::get<std::unique_ptr<session_store>>(created));
  auto writer = std::make_shared<background_writer>();
  store->write_in_background(writer);
  auto opened = jsonl_event_sink::open((d.root / "events.jsonl").string(), true, {}, writer);
  REQUIRE(opened.sink);

  writer->pause();  // a frozen filesystem
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    step_result r;
    r.step_id = "fan[" + std::to_string(i) + "]";
    r.status = step_status::completed;
    store->record(r, {});
    event e;
    e.kind = event_kind::step_end;
    e.step = r.step_id;
    opened.sink->on_event(e);
  }
  store->sync();
  CHECK(std::chrono::steady_clock::now() - start < 1s);  // nothing waited for the disk
  const auto journal = std::filesystem::path(store->dir()) / "journal.jsonl";
  CHECK(lines_in(journal) == 0);
  CHECK(lines_in(d.root / "events.jsonl") == 0);
  CHECK(store->records() == 0);

  writer->resume();
  REQUIRE(store->flush(10s));
  CHECK(lines_in(journal) == 50);
  CHECK(lines_in(d.root / "events.jsonl") == 50);
  CHECK(store->records() == 50);
  CHECK(opened.sink->lines_written() == 50);
  CHECK(store->failure().empty());
  // A snapshot written in place comes after the queue: it counts every record.
  CHECK(store->save_state().empty());
  const auto state = session_store::read_state(store->dir());
  REQUIRE(std::holds_alternative<boost::json::object>(state));
  CHECK(std::get<boost::json::object>(state).at("records").to_number<std::int64_t>() == 50);
}

TEST_CASE("background writer: a write that fails on the writer's thread reaches the failure handler once") {
  auto writer = std::make_shared<background_writer>();
  auto opened = jsonl_event_sink::open("/dev/full", false, {}, writer);
  REQUIRE(opened.sink);
  event e;
  e.kind = event_kind::warning;
  e.message = "x";
  opened.sink->on_event(e);
  opened.sink->on_event(e);
  writer->drain();
  CHECK(opened.sink->failed());
  CHECK(opened.sink->lines_written() == 0);
  CHECK(opened.sink->error() == "cannot write events file '/dev/full': No space left on device");
}
