// Jobs Slurm keeps waiting (docs/scale-out.md, "Held and pending jobs"): squeue's state and
// reason read as held, pending or throttled; the watch's notes, its one warning and
// --pending-timeout. And the capture of a job's output read with a gap (only its head and tail).
#include <catch2/catch.hpp>

#include "executor/slurm_pending.hpp"
#include "executor/slurm_script.hpp"
#include "process/output_capture.hpp"

#include <string>
#include <vector>

using namespace std::chrono_literals;
using arun::io::pending_watch;
using arun::io::slurm_options;
using arun::io::slurm_waiting;

TEST_CASE("slurm_waiting reads held, pending and throttled jobs from squeue's state and reason") {
  const auto admin = slurm_waiting("PENDING", "JobHeldAdmin");
  CHECK(admin.waiting);
  CHECK(admin.held);
  CHECK(admin.note == "pending (JobHeldAdmin)");
  CHECK(slurm_waiting("PENDING", "JobHeldUser").held);
  // After a controller restart: the job ran, was requeued, and is held.
  const auto requeued = slurm_waiting("PENDING", "launch failed requeued held");
  CHECK(requeued.held);
  CHECK(requeued.note == "pending (launch failed requeued held)");
  const auto hold_state = slurm_waiting("REQUEUE_HOLD", "None");
  CHECK(hold_state.held);
  CHECK(hold_state.note == "pending (REQUEUE_HOLD)");
  const auto resources = slurm_waiting("PENDING", "Resources");
  CHECK(resources.waiting);
  CHECK_FALSE(resources.held);
  CHECK(resources.note == "pending (Resources)");
  CHECK(slurm_waiting("PENDING", "JobArrayTaskLimit").throttled);
  CHECK(slurm_waiting("PENDING", "None").note == "pending (PENDING)");
  for (const char* state : {"RUNNING", "COMPLETING", "COMPLETED", "", "CONFIGURING"})
    CHECK_FALSE(slurm_waiting(state, "None").waiting);
}

TEST_CASE("pending_watch notes a held job at once, warns once, and gives it up at --pending-timeout") {
  slurm_options o;
  o.pending_timeout = 30s;
  std::vector<std::string> warnings;
  o.warn = [&](const std::string& key, const std::string& message) { warnings.push_back(key + ": " + message); };
  const std::string key = "fan[3]";
  pending_watch watch(o, key);
  std::map<std::string, std::string, std::less<>> notes;
  const auto t0 = pending_watch::clock::now();
  const auto held = slurm_waiting("PENDING", "JobHeldAdmin");
  CHECK(watch.look(held, "12", false, t0, notes).empty());
  CHECK(notes.at("fan[3]") == "pending (JobHeldAdmin)");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "fan[3]: Slurm job 12 is pending (JobHeldAdmin): it will not start until it is released "
                       "(scontrol release 12); --pending-timeout fails it after 30 s");
  CHECK(watch.look(held, "12", false, t0 + 29s, notes).empty());
  CHECK(warnings.size() == 1);  // once
  const auto why = watch.look(held, "12", false, t0 + 31s, notes);
  CHECK(why == "Slurm job 12 waited in the queue for 31 s, pending (JobHeldAdmin): cancelled at --pending-timeout 30 s");
  // Running again: the note goes, and the count starts anew.
  CHECK(watch.look(slurm_waiting("RUNNING", "None"), "12", true, t0 + 32s, notes).empty());
  CHECK(notes.empty());
  CHECK(watch.look(held, "12", true, t0 + 40s, notes).empty());
  CHECK(warnings.size() == 2);
  CHECK(warnings[1].find("after it ran (requeued)") != std::string::npos);
}

TEST_CASE("pending_watch leaves a job pending for resources alone until the warning's time, and never a throttled one") {
  slurm_options o;  // no --pending-timeout
  std::vector<std::string> warnings;
  o.warn = [&](const std::string&, const std::string& message) { warnings.push_back(message); };
  const std::string key = "s";
  pending_watch watch(o, key);
  std::map<std::string, std::string, std::less<>> notes;
  const auto t0 = pending_watch::clock::now();
  const auto resources = slurm_waiting("PENDING", "Resources");
  CHECK(watch.look(resources, "7", false, t0, notes).empty());
  CHECK(notes.empty());
  CHECK(watch.look(resources, "7", false, t0 + 9min, notes).empty());
  CHECK(warnings.empty());
  CHECK(watch.look(resources, "7", false, t0 + 10min, notes).empty());
  CHECK(notes.at("s") == "pending (Resources)");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "Slurm job 7 has been pending (Resources) for 10 min; --pending-timeout DURATION would fail it");
  // Waiting for the array's task limit (arun's own -j) is not Slurm's queue: never counted.
  pending_watch throttled(o, key);
  notes.clear();
  const auto limit = slurm_waiting("PENDING", "JobArrayTaskLimit");
  CHECK(throttled.look(limit, "8_1", false, t0, notes).empty());
  CHECK(throttled.look(limit, "8_1", false, t0 + 1h, notes).empty());
  CHECK(notes.empty());
  CHECK(warnings.size() == 1);
}

TEST_CASE("output_capture with a skipped middle keeps the head, counts every byte and keeps the tail after the gap") {
  arun::io::capture_limits limits;
  limits.max_bytes = 10;
  limits.tail_bytes = 64;
  std::vector<std::string> lines;
  arun::io::output_capture capture(limits, [&](std::string_view line, bool) { lines.emplace_back(line); });
  capture.append("first line\nsecond");
  capture.skip(1'000'000);
  capture.append("ond half\nlast line\n");
  capture.finish();
  const auto kept = capture.take();
  CHECK(kept.text == "first line");
  CHECK(kept.truncated);
  CHECK(kept.total_bytes == 17 + 1'000'000 + 19);
  CHECK(kept.tail == "ond half\nlast line\n");
  // The line the gap cut is not delivered in pieces.
  CHECK(lines == std::vector<std::string>{"first line", "last line"});
}
