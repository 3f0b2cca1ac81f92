// The final result (docs/reference/formats.md, "Run result"): loop iterations and sub-recipe
// children only where they apply, the run's error and pending gate, and the text layout.
#include <catch2/catch.hpp>

#include "event_samples.hpp"
#include "output/event_json.hpp"
#include "files/json_text.hpp"
#include "output/result_format.hpp"
#include "output/secret_masker.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

using namespace arun;
using namespace arun::io;
using namespace std::chrono_literals;

namespace {

step_result loop_step() {
  auto r = test::finished("fan", step_status::completed);
  r.iterations.emplace();
  r.iterations->total = 1000;
  r.iterations->completed = 37;
  r.iterations->failed = 1;
  r.iterations->skipped = 962;
  r.output = boost::json::array{1, 2};
  return r;
}

step_result call_step() {
  auto r = test::finished("call", step_status::failed, "sub-recipe failed\ndetail");
  r.children.push_back(test::finished("prepare", step_status::completed));
  auto inner = test::finished("nested", step_status::failed, "exit code 1");
  inner.children.push_back(test::finished("deep", step_status::failed, "exit code 1"));
  r.children.push_back(std::move(inner));
  return r;
}

run_result sample_run() {
  run_result run;
  run.recipe_name = "demo";
  run.session_id = "S1";
  run.status = run_status::failed;
  run.duration = 1s;
  run.step_results.push_back(test::finished("plain", step_status::completed));
  run.step_results.push_back(loop_step());
  run.step_results.push_back(call_step());
  return run;
}

}  // namespace

TEST_CASE("step entries have iterations only for loops and children only for sub-recipes") {
  const auto plain = step_to_json(test::finished("plain", step_status::completed));
  CHECK_FALSE(plain.contains("iterations"));
  CHECK_FALSE(plain.contains("children"));
  CHECK(plain.size() == 12);
  // Never started (the sample's times are unset): null, not the epoch.
  CHECK(plain.at("started_at").is_null());
  CHECK(plain.at("ended_at").is_null());

  const auto loop = step_to_json(loop_step());
  CHECK(loop.at("iterations") == boost::json::parse(R"({"total":1000,"completed":37,"failed":1,"skipped":962})"));
  CHECK_FALSE(loop.contains("children"));

  const auto call = step_to_json(call_step());
  CHECK_FALSE(call.contains("iterations"));
  const auto& children = call.at("children").as_array();
  REQUIRE(children.size() == 2);
  CHECK(children[0].at("step_id") == "prepare");
  CHECK(children[1].at("children").at(0).at("step_id") == "deep");
  CHECK(children[1].at("children").at(0).at("error") == "exit code 1");
  CHECK(children[0].at("error").is_null());
}

TEST_CASE("the run object has error null when empty and waiting_approval only when waiting") {
  auto run = sample_run();
  auto o = result_to_json(run);
  CHECK(o.at("error").is_null());
  CHECK_FALSE(o.contains("waiting_approval"));
  CHECK(to_compact_json(o).find(R"("duration":1.0,)") != std::string::npos);

  run.error = "recipe file changed";
  run.status = run_status::waiting_approval;
  run.waiting.push_back({"deploy", "Ship it?"});
  o = result_to_json(run);
  CHECK(o.at("error") == "recipe file changed");
  CHECK(o.at("status") == "waiting_approval");
  CHECK(o.at("waiting_approval") == boost::json::parse(R"({"step_id":"deploy","step":"deploy","prompt":"Ship it?"})"));
  CHECK(o.at("waiting_approvals") == boost::json::parse(R"([{"step_id":"deploy","step":"deploy","prompt":"Ship it?"}])"));
  // A fan-out waits at several gates: the first stays `waiting_approval`, all are listed.
  run.waiting.push_back({"fan[1]/review", "Ship b?"});
  o = result_to_json(run);
  CHECK(o.at("waiting_approval").at("step") == "deploy");
  CHECK(o.at("waiting_approvals").as_array().size() == 2);
  CHECK(o.at("waiting_approvals").at(1).at("step") == "fan[1]/review");
}

TEST_CASE("loop counts tell cancelled and never-started iterations from skipped ones") {
  auto loop = loop_step();
  loop.iterations->skipped = 2;
  loop.iterations->cancelled = 8;
  loop.iterations->not_run = 952;
  CHECK(step_to_json(loop).at("iterations") ==
        boost::json::parse(R"({"total":1000,"completed":37,"failed":1,"skipped":2,"cancelled":8,"not_run":952})"));
  auto run = sample_run();
  run.duration = {};
  run.status = run_status::cancelled;
  run.step_results = {loop};
  CHECK(result_to_text(run) == "demo: cancelled in 0.00s (session S1)\n"
                               "  completed fan (0.00s) iterations 37/1000 completed, 1 failed, 2 skipped, 8 cancelled, "
                               "952 not run\n"
                               "1 step: 1 completed · 1,000 iterations: 37 completed, 1 failed, 2 skipped, 8 "
                               "cancelled, 952 not run\n"
                               "resume with: arun resume S1\n");
  run.status = run_status::completed;  // nothing to resume
  CHECK(result_to_text(run).find("resume with") == std::string::npos);
}

TEST_CASE("every JSON document starts with format_version and arun_version, times are RFC 3339 UTC") {
  auto run = sample_run();
  run.started_at = std::chrono::system_clock::time_point{} + 1'764'000'000'123ms;
  run.ended_at = run.started_at + 1s;
  run.step_results[0].started_at = run.started_at;
  run.step_results[0].ended_at = run.started_at + 250ms;
  const auto o = result_to_json(run);
  CHECK(o.at("format_version") == json_format_version);
  CHECK(o.at("arun_version") == ARUN_VERSION);
  CHECK(o.at("started_at") == "2025-11-24T16:00:00.123Z");
  CHECK(o.at("ended_at") == "2025-11-24T16:00:01.123Z");
  CHECK(o.at("step_results").at(0).at("ended_at") == "2025-11-24T16:00:00.373Z");
  CHECK(o.at("step_results").at(1).at("started_at").is_null());
  // The format reads back to the same millisecond; anything else is refused.
  CHECK(parse_rfc3339_ms("2025-11-24T16:00:00.373Z") == run.started_at + 250ms);
  CHECK(parse_rfc3339_ms("2025-11-24T16:00:00Z") == run.started_at - 123ms);
  for (const char* bad : {"", "2025-11-24", "2025-11-24T16:00:00", "2025-13-01T00:00:00Z", "2025-11-24T16:00:00.Z",
                          "2025-11-24T16:00:00.1Zx", "2025-02-30T00:00:00Z"})
    CHECK_FALSE(parse_rfc3339_ms(bad));
}

TEST_CASE("the text result indents children and shows loop iteration counts") {
  auto run = sample_run();
  run.error = "step call failed";
  CHECK(result_to_text(run) ==
        "demo: failed in 1.00s (session S1)\n"
        "  completed plain (0.00s)\n"
        "  completed fan (0.00s) iterations 37/1000 completed, 1 failed, 962 skipped\n"
        "  failed    call (0.00s) sub-recipe failed\n"
        "    completed prepare (0.00s)\n"
        "    failed    nested (0.00s) exit code 1\n"
        "      failed    deep (0.00s) exit code 1\n"
        "error: step call failed\n"
        "3 steps: 2 completed, 1 failed · 1,000 iterations: 37 completed, 1 failed, 962 skipped\n"
        "resume with: arun resume S1\n");
}

TEST_CASE("a failure in the text result shows its relevant lines and its log, JSON names the log") {
  auto run = sample_run();
  run.step_results.resize(1);
  step_result failed;
  failed.step_id = "fan";
  failed.status = step_status::failed;
  failed.attempts = 1;
  failed.error = "step 'fan[3]': exit code 2\nwarning: slow disk\nError: item 3 is broken\nat a\nat b\nat c\n\n"
                 "--- stdout ---\nprocessing 3\n";
  run.step_results.push_back(failed);
  run.error = "step 'fan[3]': exit code 2";
  run.output = "two\nlines";
  const log_locator logs = [](std::string_view instance) {
    return instance == "fan[3]" ? std::string("/s/logs/fan[3].err") : std::string();
  };
  CHECK(result_to_text(run, logs) ==
        "demo: failed in 1.00s (session S1)\n"
        "  completed plain (0.00s)\n"
        "  failed    fan (0.00s) step 'fan[3]': exit code 2\n"
        "            | Error: item 3 is broken\n"
        "            | at a\n"
        "            | at b\n"
        "            | at c\n"
        "            log: /s/logs/fan[3].err\n"
        "output:\n"
        "  two\n"
        "  lines\n"
        "2 steps: 1 completed, 1 failed\n"
        "resume with: arun resume S1\n");
  const auto o = result_to_json(run, logs);
  CHECK(o.at("step_results").at(1).at("log") == "/s/logs/fan[3].err");
  CHECK_FALSE(o.at("step_results").at(0).as_object().contains("log"));
  CHECK(o.at("error") == "step 'fan[3]': exit code 2");
}

TEST_CASE("a loop's failed iterations: the first five in the text result, every one in JSON with its log") {
  auto run = sample_run();
  run.step_results.resize(1);
  auto fan = test::finished("fan", step_status::completed);
  fan.iterations.emplace();
  fan.iterations->total = 20;
  fan.iterations->completed = 13;
  fan.iterations->failed = 7;
  for (int i : {1, 3, 4, 8, 9, 12, 19})
    fan.failed_instances.push_back({"fan[" + std::to_string(i) + "]", "step 'fan[" + std::to_string(i) + "]': exit code 3"});
  fan.failed_instances[1].error = "step 'fan[3]' (item: tests/x.py): exit code 3";  // a failed iteration names its item
  fan.failed_instances[2].error = "killed by \x1b]0;owned\x07 SIGKILL";  // printed escaped
  run.step_results.push_back(fan);
  run.status = run_status::completed;
  const log_locator logs = [](std::string_view instance) {
    return instance == "fan[3]" ? std::string("/s/logs/fan[3].err") : std::string();
  };
  const auto text = result_to_text(run, logs);
  CHECK_THAT(text, Catch::Contains("  completed fan (0.00s) iterations 13/20 completed, 7 failed\n"
                                   "            failed fan[1]: exit code 3\n"
                                   "            failed fan[3] (item: tests/x.py): exit code 3\n"
                                   "            failed fan[4]: killed by \\e]0;owned\\x07 SIGKILL\n"
                                   "            failed fan[8]: exit code 3\n"
                                   "            failed fan[9]: exit code 3\n"
                                   "            … and 2 more failed\n"));
  const auto o = result_to_json(run, logs);
  const auto& failed = o.at("step_results").at(1).at("failed_instances").as_array();
  REQUIRE(failed.size() == 7);
  CHECK(failed.at(6).at("instance") == "fan[19]");
  CHECK(failed.at(6).at("error") == "step 'fan[19]': exit code 3");
  CHECK(failed.at(1).at("log") == "/s/logs/fan[3].err");
  // An iteration with a body has no log of its own: the failed step inside it gives one.
  auto body_loop = test::finished("each", step_status::completed);
  body_loop.failed_instances.push_back({"each[1]", "step 'each[1]/b': exit code 1"});
  run.step_results.push_back(body_loop);
  const log_locator inner_logs = [](std::string_view instance) {
    return instance == "each[1]/b" ? std::string("/s/logs/each[1]/b.err") : std::string();
  };
  CHECK(result_to_json(run, inner_logs).at("step_results").at(2).at("failed_instances").at(0).at("log") ==
        "/s/logs/each[1]/b.err");
  run.step_results.pop_back();
  CHECK_FALSE(failed.at(0).as_object().contains("log"));
  CHECK_FALSE(o.at("step_results").at(0).as_object().contains("failed_instances"));
  // A failed loop's own line names the failure that stopped it: the list does not repeat it.
  fan.status = step_status::failed;
  fan.error = "step 'fan[1]': exit code 3";
  fan.failed_instances.resize(2);
  run.step_results[1] = fan;
  const auto stopped = result_to_text(run, logs);
  CHECK(stopped.find("failed fan[1]:") == std::string::npos);
  CHECK_THAT(stopped, Catch::Contains("            failed fan[3] (item: tests/x.py): exit code 3\n"));
}

TEST_CASE("failure excerpts: the first error-looking line and the last three, stdout only when stderr is empty") {
  CHECK(failure_origin("step 'call/fan[2]/x': exit code 1\nmore") == "call/fan[2]/x");
  CHECK(failure_origin("step 'fan[2]' (item: a': b): exit code 1") == "fan[2]");
  CHECK(failure_origin("step 'o[1]/i[1]/leaf' (items: 2, y): exit code 7") == "o[1]/i[1]/leaf");  // nested loops
  CHECK(failure_origin("exit code 1").empty());
  CHECK(failure_origin("step 'a' failed\nstep 'b': x").empty());
  CHECK(failure_excerpt("step 'a': exit code 1").empty());
  CHECK(failure_excerpt("step 'a': exit code 1\none\ntwo") == std::vector<std::string>{"one", "two"});
  CHECK(failure_excerpt("step 'a': x\n1\nFATAL: disk\n2\n3\n4\n5") ==
        std::vector<std::string>{"FATAL: disk", "…", "3", "4", "5"});
  CHECK(failure_excerpt("step 'a': x\n1\n2\n3\n4") == std::vector<std::string>{"…", "2", "3", "4"});
  CHECK(failure_excerpt("step 'a': x\n\n--- stdout ---\nonly stdout\n") == std::vector<std::string>{"only stdout"});
  const auto long_line = failure_excerpt("step 'a': x\n" + std::string(500, 'z'));
  REQUIRE(long_line.size() == 1);
  CHECK(long_line[0] == std::string(200, 'z') + "… (500 bytes)");
}

TEST_CASE("the recipe's output: short text whole, a long value as one line with its size") {
  auto run = sample_run();
  run.step_results.clear();
  run.status = run_status::completed;
  run.output = "done";
  CHECK(result_to_text(run).find("\noutput: done\n") != std::string::npos);
  boost::json::array items;
  for (int i = 0; i < 2000; ++i) items.push_back(i);
  run.output = items;
  const auto text = result_to_text(run);
  CHECK(text.find("\noutput: [0,1,2,3,") != std::string::npos);
  CHECK(text.find("… (2,000 items, 8.7 KB)\n") != std::string::npos);
  run.output = nullptr;
  CHECK(result_to_text(run).find("output") == std::string::npos);
}

TEST_CASE("the text result of a run waiting for approval shows the gate and the whole prompt") {
  auto run = sample_run();
  run.step_results.clear();
  run.duration = {};
  run.status = run_status::waiting_approval;
  run.waiting.push_back({"deploy", "Ship it?\nChanges: 3 files"});
  CHECK(result_to_text(run) ==
        "demo: waiting_approval in 0.00s (session S1)\n"
        "waiting for approval at deploy:\n"
        "  Ship it?\n"
        "  Changes: 3 files\n"
        "decide with: arun approve S1 (or arun deny S1), then: arun resume S1\n");
  run.waiting.push_back({"fan[0]/review", "Ship a?"});
  CHECK(result_to_text(run) ==
        "demo: waiting_approval in 0.00s (session S1)\n"
        "waiting for approval at deploy:\n"
        "  Ship it?\n"
        "  Changes: 3 files\n"
        "waiting for approval at fan[0]/review:\n"
        "  Ship a?\n"
        "decide each with: arun approve S1 --step INSTANCE (or --all), then: arun resume S1\n");
}

TEST_CASE("the JSON result written in pieces is the result document's text, masked alike") {
  auto run = sample_run();
  run.context["token"] = "s3cret-value";
  run.error = "failed with s3cret-value";
  for (int i = 0; i < 3000; ++i)  // enough entries for several pieces
    run.step_results.push_back(test::finished("s" + std::to_string(i), step_status::completed, "said s3cret-value"));
  const log_locator logs = [](std::string_view instance) { return "/logs/" + std::string(instance) + ".log"; };
  secret_masker masker;
  masker.add("s3cret-value");

  std::vector<std::string> pieces;
  const auto collect = [&](std::string_view text) {
    pieces.emplace_back(text);
    return true;
  };
  REQUIRE(write_result_json(run, logs, &masker, collect));
  CHECK(pieces.size() > 2);
  std::string streamed;
  for (const auto& p : pieces) streamed += p;
  boost::json::value whole = result_to_json(run, logs);
  masker.mask_json(whole);
  CHECK(streamed == to_json_text(whole) + "\n");
  CHECK(streamed.find("s3cret-value") == std::string::npos);

  int calls = 0;  // a failed write stops the output
  CHECK_FALSE(write_result_json(run, logs, nullptr, [&](std::string_view) { return ++calls, false; }));
  CHECK(calls == 1);
}

TEST_CASE("a cluster job's wait in the queue is said apart from its run time in JSON, events and text") {
  auto run = sample_run();
  run.step_results.resize(1);
  auto& job = run.step_results[0];
  job.duration = 1s;
  job.queued = 36s;
  const auto entry = step_to_json(job);
  CHECK(entry.at("duration") == boost::json::value(1.0));
  CHECK(entry.at("queued") == boost::json::value(36.0));
  const auto event = event_to_json(test::step_end(job));
  CHECK(event.at("duration") == boost::json::value(1.0));
  CHECK(event.at("queued") == boost::json::value(36.0));
  CHECK(result_to_text(run).find("  completed plain (1.00s, queued 36.0s)\n") != std::string::npos);
  // Nothing queues locally: no key, no words.
  job.queued.reset();
  CHECK_FALSE(step_to_json(job).contains("queued"));
  CHECK_FALSE(event_to_json(test::step_end(job)).contains("queued"));
  CHECK(result_to_text(run).find("  completed plain (1.00s)\n") != std::string::npos);
}

TEST_CASE("the text result says a failure once: no error line when a step line says it already") {
  auto run = sample_run();
  run.step_results.push_back(test::finished("bad", step_status::failed, "step 'bad': exit code 3\noops"));
  run.error = "step 'bad': exit code 3";
  auto text = result_to_text(run);
  CHECK(text.find("  failed    bad (0.00s) step 'bad': exit code 3\n") != std::string::npos);
  CHECK(text.find("error:") == std::string::npos);
  // A failed iteration named under its loop is a step line too.
  run = sample_run();
  run.step_results[1].failed_instances.push_back({"fan[3]", "step 'fan[3]' (item: x): exit code 1"});
  run.error = "step 'fan[3]' (item: x): exit code 1";
  CHECK(result_to_text(run).find("error:") == std::string::npos);
  // The run's own reason, which no step line gives, is said.
  run.error = "the budget is reached ($0.01 of $0.01)";
  CHECK(result_to_text(run).find("error: the budget is reached ($0.01 of $0.01)\n") != std::string::npos);
}

TEST_CASE("an instance that never started shows no duration in the text result") {
  auto run = sample_run();
  auto never = test::finished("after", step_status::not_run);
  never.attempts = 0;
  run.step_results.push_back(never);
  auto cancelled = test::finished("waited", step_status::cancelled, "step 'waited': cancelled before it started");
  cancelled.attempts = 0;
  run.step_results.push_back(cancelled);
  const auto text = result_to_text(run);
  CHECK(text.find("  not_run   after\n") != std::string::npos);
  CHECK(text.find("  cancelled waited step 'waited': cancelled before it started\n") != std::string::npos);
  CHECK(text.find("  completed plain (0.00s)\n") != std::string::npos);  // it ran, however briefly
}

TEST_CASE("a run a denial failed suggests no resume: the denial is final") {
  auto run = sample_run();
  run.denied = {"go-live"};
  auto text = result_to_text(run);
  CHECK(text.find("resume with") == std::string::npos);
  CHECK(text.find("denied: go-live (a denial is final") != std::string::npos);
  CHECK(result_to_json(run).at("denied") == boost::json::parse(R"(["go-live"])"));
  run.denied.clear();
  text = result_to_text(run);
  CHECK(text.find("resume with: arun resume S1\n") != std::string::npos);
  CHECK_FALSE(result_to_json(run).contains("denied"));
}

TEST_CASE("a reload's failures run again are listed apart from changed instances") {
  auto run = sample_run();
  run.reused = {"plain"};
  run.failed_again = {"fan[4]"};
  const auto text = result_to_text(run);
  CHECK(text.find("reload: 1 kept as recorded (unchanged): plain; 1 failed before, run again: fan[4]\n") !=
        std::string::npos);
  CHECK(result_to_json(run).at("reload") ==
        boost::json::parse(R"({"reused":["plain"],"changed":[],"failed":["fan[4]"]})"));
}
