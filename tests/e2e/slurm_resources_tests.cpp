// `resources:`, `executor: local` and crash-safe resume in a run on a private Slurm cluster
// (tests/support/slurm_cluster.hpp): the fields become the job's options, a local step runs
// beside its cluster siblings on arun's machine, cluster licenses cap concurrency (the agents'
// provider license included), and a resume after kill -9 takes up the earlier run's jobs.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "slurm_cluster.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <sstream>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using arun::test::slurm_cluster;

namespace {

bool slurm_missing() {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return true;
  }
  return false;
}

std::map<std::string, std::string> outputs_of(const boost::json::object& result) {
  std::map<std::string, std::string> out;
  for (const auto& v : result.at("step_results").as_array()) {
    const auto& s = v.as_object();
    const auto* o = s.if_contains("output");
    out[std::string(s.at("step_id").as_string())] = o && o->is_string() ? std::string(o->get_string())
                                                     : o ? boost::json::serialize(*o) : "";
  }
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename Check>
bool wait_for(Check check, std::chrono::seconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (!check()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Whether any two [start, end] intervals overlap.
bool overlapping(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) return true;
  return false;
}

// A foreach of `items` steps, `at_once` at a time, each writing its start and end time to
// `ledger`, sleeping `sleep` seconds and printing "item N".
std::string ledger_fan_out(const fs::path& ledger, int items, int at_once, const std::string& sleep = "0.4") {
  const std::string log_line = "\"$(date +%s.%N)\" >> '" + ledger.string() + "'";
  std::string list;
  for (int i = 1; i <= items; ++i) list += (i > 1 ? ", " : "") + std::to_string(i);
  return "name: fan\nsteps:\n  - id: each\n    foreach: [" + list + "]\n    max_concurrent: " +
         std::to_string(at_once) + "\n    command: |\n      echo start " + log_line +
         "\n      sleep " + sleep + "\n      echo end " + log_line + "\n      echo \"item {{item}}\"\n";
}

// A cluster whose arrays hold at most 5 tasks (MaxArraySize=6).
slurm_cluster::options small_arrays() {
  slurm_cluster::options opts;
  opts.extra_conf = {"MaxArraySize=6"};
  return opts;
}

// The outputs of ledger_fan_out's `items` items, in item order.
void check_item_outputs(const boost::json::object& result, std::size_t items) {
  const auto& outputs = result.at("step_results").as_array().at(0).at("output").as_array();
  REQUIRE(outputs.size() == items);
  for (std::size_t i = 0; i < outputs.size(); ++i) CHECK(outputs.at(i) == boost::json::value("item " + std::to_string(i + 1)));
}

// The most steps running at once by `ledger`'s start and end times (`steps` of each).
int most_running(const fs::path& ledger, std::size_t steps) {
  std::vector<std::pair<double, int>> changes;
  std::istringstream lines(slurp(ledger));
  for (std::string what; lines >> what;) {
    double at = 0;
    lines >> at;
    changes.emplace_back(at, what == "start" ? 1 : -1);
  }
  REQUIRE(changes.size() == 2 * steps);
  std::sort(changes.begin(), changes.end());
  int running = 0, peak = 0;
  for (const auto& c : changes) peak = std::max(peak, running += c.second);
  return peak;
}

}  // namespace

TEST_CASE("slurm run: resources become the job's sbatch options and executor local keeps a step on arun's machine") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    // The recipe's default (mem, nice) under the step's own (cpus, time); `executor: local`
    // on one member of a parallel group, the other member on the cluster.
    std::ofstream(dir.root / "placed.yaml") << R"(name: placed
resources:
  mem: 100M
  extra: ["--nice=7"]
steps:
  - id: asked
    resources: {cpus: 2, time: "10m"}
    command: squeue -h -j "$SLURM_JOB_ID" -o "%C %m %l %y"
  - id: here
    parallel_group: g
    executor: local
    command: echo "${SLURM_JOB_ID:-none}"
  - id: there
    parallel_group: g
    command: echo "${SLURM_JOB_ID:-none}"
)";
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                         "--executor", "slurm", "placed.yaml"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto out = outputs_of(arun::test::result_json(r));
    CHECK(out.at("asked") == "2 100M 10:00 7");
    CHECK(out.at("here") == "none");
    CHECK(out.at("there") != "none");
    CHECK(out.at("there").find_first_not_of("0123456789") == std::string::npos);
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a cluster license caps concurrent steps and an agent takes its provider's license") {
  if (slurm_missing()) return;
  {
    slurm_cluster::options opts;
    opts.licenses = {{"tok", 1}, {"fake", 1}};
    slurm_cluster cluster(opts);
    arun::test::temp_dir dir;
    const auto state = dir.root / "fake-state";
    // Three bash steps naming the license; three agents of the fake provider, which do not.
    std::ofstream(dir.root / "capped.yaml") << R"(name: capped
steps:
  - id: licensed
    foreach: [a, b, c]
    parallel: true
    resources: {licenses: {tok: 1}}
    command: |
      date +%s.%N > {{item}}.start; sleep 1; date +%s.%N > {{item}}.end
  - id: agents
    foreach: [a, b, c]
    parallel: true
    prompt: |
      agent {{item}}
      FAKE: sleep 1
)";
    const auto r = arun::test::run_arun(
        {"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(), "--executor", "slurm",
         "--agent-cli", "fake", "capped.yaml"},
        dir.root.string(), std::chrono::seconds(120),
        [&] {
          auto env = cluster.env();
          env.push_back("FAKE_AGENT_STATE=" + state.string());
          env.push_back("ARUN_FAKE_AGENT=" + std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent");
          return env;
        }());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    std::vector<std::pair<double, double>> bash_spans;
    for (const char* item : {"a", "b", "c"}) {
      double start = 0, end = 0;
      std::ifstream(dir.root / (std::string(item) + ".start")) >> start;
      std::ifstream(dir.root / (std::string(item) + ".end")) >> end;
      REQUIRE(start > 0);
      bash_spans.emplace_back(start, end);
    }
    CHECK_FALSE(overlapping(bash_spans));
    std::vector<std::pair<double, double>> agent_spans;
    std::ifstream calls(state / "calls.jsonl");
    for (std::string line; std::getline(calls, line);) {
      const auto call = boost::json::parse(line).as_object();
      agent_spans.emplace_back(call.at("start").to_number<double>(), call.at("end").to_number<double>());
    }
    REQUIRE(agent_spans.size() == 3);
    CHECK_FALSE(overlapping(agent_spans));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a resume after kill -9 takes up the jobs of the killed run and submits none twice") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    // Each step appends its name to the effects ledger when its work is done.
    std::ofstream(dir.root / "crash.yaml") << R"(name: crash
steps:
  - id: quick
    parallel_group: g
    command: touch quick.started; sleep 1; echo quick >> effects; echo quick-out
  - id: slow
    parallel_group: g
    command: touch slow.started; sleep 6; echo slow >> effects; echo slow-out
  - id: after
    command: echo after >> effects; echo after-out
)";
    std::string id;
    {
      arun::test::background_arun first({(dir.root / "crash.yaml").string(), "-C", dir.root.string(), "--executor", "slurm",
                                         "--session-dir", sessions.string(), "-q"},
                                        dir.root, cluster.env());
      REQUIRE(wait_for([&] { return fs::exists(dir.root / "quick.started") && fs::exists(dir.root / "slow.started"); },
                       std::chrono::seconds(60)));
      ::kill(first.pid, SIGKILL);
      CHECK(first.wait_exit(std::chrono::seconds(10)) == 128 + SIGKILL + 1000);
      for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
    }
    REQUIRE_FALSE(id.empty());
    // The killed run's jobs go on: quick finishes while no arun is there, slow still runs
    // when the resume starts.
    REQUIRE(wait_for([&] { return slurp(dir.root / "effects") == "quick\n"; }, std::chrono::seconds(30)));
    REQUIRE(wait_for([&] { return cluster.queue().size() == 1; }, std::chrono::seconds(10)));
    const auto r = arun::test::run_arun({"resume", id, "--session-dir", sessions.string(), "-q", "--output-format", "json"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto out = outputs_of(arun::test::result_json(r));
    CHECK(out.at("quick") == "quick-out");
    CHECK(out.at("slow") == "slow-out");
    CHECK(out.at("after") == "after-out");
    // Every effect exactly once: neither job was submitted again.
    CHECK(slurp(dir.root / "effects") == "quick\nslow\nafter\n");
    // arun has the last job's result once its wrapper wrote the exit file; Slurm lists the job
    // until the wrapper has exited, a moment later on a loaded machine.
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a job Slurm will never start fails its step at once with Slurm's reason") {
  if (slurm_missing()) return;
  {
    slurm_cluster::options opts;
    opts.extra_conf = {"PartitionName=short Nodes=ALL MaxTime=1 State=UP OverSubscribe=FORCE:32"};
    slurm_cluster cluster(opts);
    arun::test::temp_dir dir;
    std::ofstream(dir.root / "never.yaml") << R"(name: never
steps:
  - id: too-long
    resources: {partition: short, time: 2h}
    command: touch ran
)";
    const auto started = std::chrono::steady_clock::now();
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                         "--executor", "slurm", "never.yaml"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    CHECK(r.exit_code == 1);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));  // not a hang
    const auto result = arun::test::result_json(r);
    const auto error = std::string(result.at("step_results").as_array().at(0).at("error").as_string());
    // Slurm 22.05 says PartitionConfig for a time above the partition's MaxTime.
    CHECK_THAT(error, Catch::Contains("Slurm will not start job") &&
                          (Catch::Contains("PartitionTimeLimit") || Catch::Contains("PartitionConfig")) &&
                          Catch::Contains("time"));
    CHECK_FALSE(fs::exists(dir.root / "ran"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: the items a fan-out starts together go as one array job, each with its own result") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    std::ofstream(dir.root / "fan.yaml") << R"(name: fan
steps:
  - id: each
    foreach: [a, b, c, d, e, f]
    parallel: true
    command: echo "out {{item}}"; echo "err {{item}}" >&2; [ {{item}} != c ] || exit 3
    on_error: continue
)";
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", sessions.string(), "-j", "8",
                                         "--executor", "slurm", "fan.yaml"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    const auto& each = result.at("step_results").as_array().at(0).as_object();
    INFO(boost::json::serialize(each));
    CHECK(each.at("iterations").at("completed") == 5);
    CHECK(each.at("iterations").at("failed") == 1);
    // Each task's own stdout, in item order, its stderr kept apart.
    const auto& outputs = each.at("output").as_array();
    REQUIRE(outputs.size() == 6);
    for (const std::size_t i : {0, 1, 3, 4, 5})
      CHECK(outputs.at(i) == boost::json::value("out " + std::string(1, static_cast<char>('a' + i))));
    // One sbatch carried all six jobs.
    const std::string id(result.at("session_id").as_string());
    CHECK_THAT(slurp(sessions / id / "arun.log"), Catch::Contains("6 jobs submitted in 1 sbatch calls (1 arrays)"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a job in flight is taken up even when the journal holds an older record of its step") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    std::ofstream(dir.root / "twice.yaml") << R"(name: twice
steps:
  - id: work
    command: echo start >> effects; sleep 4; echo end >> effects; echo done
)";
    const auto start_count = [&] {
      const auto text = slurp(dir.root / "effects");
      std::size_t n = 0;
      for (auto at = text.find("start"); at != std::string::npos; at = text.find("start", at + 1)) ++n;
      return n;
    };
    std::string id;
    {
      // Run 1: interrupted, so the journal records `work` as cancelled (it runs again).
      arun::test::background_arun first({(dir.root / "twice.yaml").string(), "-C", dir.root.string(), "--executor",
                                         "slurm", "--session-dir", sessions.string(), "-q"},
                                        dir.root, cluster.env());
      REQUIRE(wait_for([&] { return start_count() == 1; }, std::chrono::seconds(60)));
      ::kill(first.pid, SIGINT);
      CHECK(first.wait_exit(std::chrono::seconds(60)) == 128 + SIGINT);
      for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
    }
    REQUIRE_FALSE(id.empty());
    REQUIRE(wait_for([&] { return cluster.queue().empty(); }, std::chrono::seconds(20)));
    {
      // Run 2: the resume submits it again, and is killed while that job runs.
      arun::test::background_arun second({"resume", id, "--session-dir", sessions.string(), "-q"}, dir.root,
                                         cluster.env());
      REQUIRE(wait_for([&] { return start_count() == 2; }, std::chrono::seconds(60)));
      ::kill(second.pid, SIGKILL);
      second.wait_exit(std::chrono::seconds(10));
    }
    // Run 3 takes run 2's job up instead of submitting a third.
    const auto r = arun::test::run_arun({"resume", id, "--session-dir", sessions.string(), "-q", "--output-format", "json"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    CHECK(outputs_of(arun::test::result_json(r)).at("work") == "done");
    CHECK(start_count() == 2);
    CHECK(slurp(dir.root / "effects").ends_with("start\nend\n"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: Ctrl-C cancels a pending array task alone and it never runs") {
  if (slurm_missing()) return;
  {
    slurm_cluster::options opts;
    opts.licenses = {{"tok", 1}};
    slurm_cluster cluster(opts);
    arun::test::temp_dir dir;
    // One array of two tasks: the one that gets the only license runs, the other waits.
    std::ofstream(dir.root / "pending.yaml") << R"(name: pending
steps:
  - id: each
    foreach: [a, b]
    parallel: true
    resources: {licenses: {tok: 1}}
    command: touch {{item}}.ran; sleep 30
)";
    arun::test::background_arun run({(dir.root / "pending.yaml").string(), "-C", dir.root.string(), "--executor",
                                     "slurm", "--session-dir", (dir.root / "sessions").string(), "-q"},
                                    dir.root, cluster.env());
    REQUIRE(wait_for([&] { return fs::exists(dir.root / "a.ran") || fs::exists(dir.root / "b.ran"); },
                     std::chrono::seconds(60)));
    const auto waiting = fs::exists(dir.root / "a.ran") ? "b.ran" : "a.ran";
    REQUIRE(cluster.queue().size() == 2);  // the running task and the pending one
    const auto interrupted = std::chrono::steady_clock::now();
    ::kill(run.pid, SIGINT);
    CHECK(run.wait_exit(std::chrono::seconds(60)) == 128 + SIGINT);
    // TERM for the running task (it ends at once), a plain cancel for the pending one.
    CHECK(std::chrono::steady_clock::now() - interrupted < std::chrono::seconds(15));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
    std::this_thread::sleep_for(std::chrono::seconds(2));
    CHECK_FALSE(fs::exists(dir.root / waiting));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a foreach larger than MaxArraySize goes as a few arrays that share its throttle") {
  if (slurm_missing()) return;
  {
    // Arrays of at most 5 tasks; the loop runs 3 at a time: 12 items are 3 arrays, and their
    // task limits together never let more than 3 tasks run.
    slurm_cluster cluster(small_arrays());
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    const auto ledger = dir.root / "ledger";
    std::ofstream(dir.root / "fan.yaml") << ledger_fan_out(ledger, 12, 3);
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", sessions.string(), "-j", "8",
                                         "--executor", "slurm", "fan.yaml"},
                                        dir.root.string(), std::chrono::seconds(120), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    check_item_outputs(result, 12);
    const int peak = most_running(ledger, 12);
    CHECK(peak <= 3);
    CHECK(peak >= 2);  // and in parallel, not one by one
    const std::string id(result.at("session_id").as_string());
    const auto log = slurp(sessions / id / "arun.log");
    CHECK_THAT(log, Catch::Contains("12 jobs submitted in 3 sbatch calls (3 arrays)"));
    // The later arrays' limits were raised as the earlier ones drained.
    CHECK_THAT(log, !Catch::Contains(" 0 array task limit updates"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: after a second Ctrl-C a resume runs the jobs it cancelled again") {
  if (slurm_missing()) return;
  // Steps that shrug off the first Ctrl-C's TERM are in flight when the second one kills
  // them (no exit status: the stop's marker tells); plain steps die of the TERM first (the
  // `cancelling` record tells). Either way the resume runs them again, at once.
  const bool stubborn = GENERATE(true, false);
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    std::ofstream(dir.root / "again.yaml") << R"(name: again
steps:
  - id: each
    foreach: [a, b]
    parallel: true
    command: touch {{item}}.started; )" << (stubborn ? "trap '' TERM; " : "") << R"([ -e go ] || sleep 60; echo "done {{item}}"
)";
    std::string id;
    {
      arun::test::background_arun first({(dir.root / "again.yaml").string(), "-C", dir.root.string(), "--executor",
                                         "slurm", "--session-dir", sessions.string(), "-q"},
                                        dir.root, cluster.env());
      REQUIRE(wait_for([&] { return fs::exists(dir.root / "a.started") && fs::exists(dir.root / "b.started"); },
                       std::chrono::seconds(60)));
      ::kill(first.pid, SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(stubborn ? 500 : 100));
      ::kill(first.pid, SIGINT);
      CHECK(first.wait_exit(std::chrono::seconds(30)).has_value());
      for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
    }
    REQUIRE_FALSE(id.empty());
    REQUIRE(wait_for([&] { return cluster.queue().empty(); }, std::chrono::seconds(20)));
    std::ofstream(dir.root / "go") << "";
    // Not taken up as failures (killed by SIGTERM), nor followed until reported lost.
    const auto r = arun::test::run_arun({"resume", id, "--session-dir", sessions.string(), "-q", "--output-format", "json"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stubborn: " << stubborn << "\nstderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    const auto& outputs = result.at("step_results").as_array().at(0).at("output").as_array();
    REQUIRE(outputs.size() == 2);
    CHECK(outputs.at(0) == "done a");
    CHECK(outputs.at(1) == "done b");
    if (stubborn)  // the record said `cancelling` (or, had the second Ctrl-C come first, the stop's marker)
      CHECK_THAT(slurp(sessions / id / "arun.log"), Catch::Contains("running the step again"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: Ctrl-C withdraws the items of a fan-out still waiting for their array") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster(small_arrays());
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    // 12 items, 2 at a time, arrays of 5: only the first array is submitted while its first
    // two tasks run.
    std::ofstream(dir.root / "wide.yaml") << R"(name: wide
steps:
  - id: each
    foreach: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    max_concurrent: 2
    command: touch {{item}}.started; sleep 60
)";
    arun::test::background_arun run({(dir.root / "wide.yaml").string(), "-C", dir.root.string(), "--executor", "slurm",
                                     "--session-dir", sessions.string(), "-q"},
                                    dir.root, cluster.env());
    const auto started = [&] {
      int n = 0;
      for (int i = 1; i <= 12; ++i) n += fs::exists(dir.root / (std::to_string(i) + ".started")) ? 1 : 0;
      return n;
    };
    REQUIRE(wait_for([&] { return started() == 2; }, std::chrono::seconds(60)));
    ::kill(run.pid, SIGINT);
    CHECK(run.wait_exit(std::chrono::seconds(60)) == 128 + SIGINT);
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
    std::this_thread::sleep_for(std::chrono::seconds(2));
    CHECK(started() == 2);  // nothing started after the Ctrl-C
    std::string id;
    for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
    // The other arrays were never submitted.
    CHECK_THAT(slurp(sessions / id / "arun.log"), Catch::Contains("5 jobs submitted in 1 sbatch calls (1 arrays)"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: when sbatch refuses an array the fan-out's jobs go one by one within its limit") {
  if (slurm_missing()) return;
  {
    // scontrol cannot tell MaxArraySize (a wrapper makes `scontrol show config` fail): arun
    // tries arrays of 1,000, which a cluster with MaxArraySize=6 refuses.
    slurm_cluster cluster(small_arrays());
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    const auto ledger = dir.root / "ledger";
    fs::create_directories(dir.root / "bin");
    const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    std::ofstream(dir.root / "bin" / "scontrol")
        << "#!/bin/sh\nif [ \"$1 $2\" = \"show config\" ]; then echo 'no config' >&2; exit 1; fi\nPATH='" << path
        << "' exec scontrol \"$@\"\n";
    fs::permissions(dir.root / "bin" / "scontrol", fs::perms::owner_all);
    std::ofstream(dir.root / "fan.yaml") << ledger_fan_out(ledger, 8, 2);
    auto env = cluster.env();
    env.push_back("PATH=" + (dir.root / "bin").string() + ":" + path);
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", sessions.string(),
                                         "--executor", "slurm", "fan.yaml"},
                                        dir.root.string(), std::chrono::seconds(120), env);
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    CHECK(most_running(ledger, 8) <= 2);
    const std::string id(arun::test::result_json(r).at("session_id").as_string());
    CHECK_THAT(slurp(sessions / id / "arun.log"), Catch::Contains("submitting them one by one"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: after kill -9 a resumed fan-out counts the killed run's array tasks against its limit") {
  if (slurm_missing()) return;
  {
    // Arrays of at most 5 tasks; the loop runs 3 at a time. The killed run's first array has 3
    // tasks running and 2 waiting; the resume submits the other 10 items. Its new arrays get
    // only the units the first array's tasks leave, and that array's limit follows the loop's:
    // never more than 3 at once, not 3 of the old array's and 3 new ones.
    slurm_cluster cluster(small_arrays());
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    const auto ledger = dir.root / "ledger";
    std::ofstream(dir.root / "fan.yaml") << ledger_fan_out(ledger, 15, 3, "3");
    const auto starts = [&] {
      const auto text = slurp(ledger);
      std::size_t n = 0;
      for (auto at = text.find("start"); at != std::string::npos; at = text.find("start", at + 1)) ++n;
      return n;
    };
    std::string id;
    {
      arun::test::background_arun first({"-q", "--session-dir", sessions.string(), "-j", "8", "--executor", "slurm",
                                         (dir.root / "fan.yaml").string()},
                                        dir.root, cluster.env());
      REQUIRE(wait_for([&] { return starts() >= 3; }, std::chrono::seconds(60)));
      ::kill(first.pid, SIGKILL);
      CHECK(first.wait_exit(std::chrono::seconds(10)) == 128 + SIGKILL + 1000);
      for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
    }
    REQUIRE_FALSE(id.empty());
    REQUIRE(starts() < 6);  // the resume finds the first array's tasks still running
    const auto r = arun::test::run_arun({"resume", id, "--session-dir", sessions.string(), "-j", "8", "-q",
                                         "--output-format", "json"},
                                        dir.root.string(), std::chrono::seconds(180), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    check_item_outputs(result, 15);
    // Every item ran once (most_running requires a start and an end of each), 3 at most at once.
    CHECK(most_running(ledger, 15) <= 3);
    const auto log = slurp(sessions / id / "arun.log");
    CHECK_THAT(log, Catch::Contains("taking up Slurm job"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a step's duration is its run time and its wait in the queue is said apart") {
  if (slurm_missing()) return;
  {
    // Two at a time: the later `sleep 1` items wait in the queue for the ones before them.
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    const auto events = dir.root / "events.jsonl";
    std::ofstream(dir.root / "fan.yaml") << R"(name: queued
steps:
  - id: each
    foreach: [1, 2, 3, 4, 5, 6]
    max_concurrent: 2
    command: sleep 1
  - id: alone
    command: sleep 1
)";
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", sessions.string(), "-j", "8",
                                         "--executor", "slurm", "--events", events.string(), "fan.yaml"},
                                        dir.root.string(), std::chrono::seconds(120), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    // Each item's step_end: a duration of about the sleep, the rest of its time queued.
    double most_queued = 0;
    int items = 0;
    std::istringstream lines(slurp(events));
    for (std::string line; std::getline(lines, line);) {
      const auto e = boost::json::parse(line).as_object();
      if (std::string(e.at("event").as_string()) != "step_end" || !std::string(e.at("step").as_string()).starts_with("each["))
        continue;
      ++items;
      INFO(line);
      REQUIRE(e.contains("queued"));
      const double duration = e.at("duration").to_number<double>(), queued = e.at("queued").to_number<double>();
      CHECK(duration >= 0.9);
      CHECK(duration < 5.0);
      CHECK(queued >= 0.0);
      most_queued = std::max(most_queued, queued);
    }
    CHECK(items == 6);
    // The last two waited for two seconds of sleep before them: more than they ran.
    CHECK(most_queued >= 1.5);
    // A job of its own too, in the result.
    const auto result = arun::test::result_json(r);
    const auto& alone = result.at("step_results").as_array().at(1).as_object();
    INFO(boost::json::serialize(alone));
    REQUIRE(alone.contains("queued"));
    CHECK(alone.at("duration").to_number<double>() >= 0.9);
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}
