// What a Slurm run leaves on the shared directory, and jobs Slurm keeps waiting
// (docs/scale-out.md, "Job files", "Held and pending jobs"): a job's raw output is read up to
// --max-output (and its tail), its files are removed once the journal has its result, `arun
// sessions clean` removes what a killed run left (never through a link), and a held job is
// shown as such and fails at --pending-timeout, which a resume keeps.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "slurm_cluster.hpp"
#include "temp_dir.hpp"

#include <boost/json.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using arun::test::slurm_cluster;

namespace {

template <typename Predicate>
bool wait_for(Predicate done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

std::string only_session(const fs::path& sessions) {
  std::string id;
  for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
  return id;
}

}  // namespace

TEST_CASE("slurm run: a job's output is kept to --max-output and its files leave the shared directory once collected") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto shared = dir.root / "shared";
    // 3 MB of output, then a last line; the next step counts the raw output files on the
    // shared directory while it runs: only its own is left.
    std::ofstream(dir.root / "loud.yaml")
        << "name: loud\nsteps:\n  - id: loud\n    command: yes 0123456789abcdef | head -c 3000000; echo TAIL-MARK; exit 3\n"
        << "    on_error: continue\n"
        << "  - id: count\n    command: find '" << (shared / "jobs").string() << "' -name out | wc -l\n";
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                         "--executor", "slurm", "--shared-dir", shared.string(), "--max-output", "1000",
                                         "loud.yaml"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    const auto& steps = result.at("step_results").as_array();
    const auto& loud = steps.at(0).as_object();
    INFO(boost::json::serialize(loud));
    CHECK(loud.at("exit_code").as_int64() == 3);
    CHECK(loud.at("truncated").as_bool());
    CHECK(loud.at("output").is_null());  // a failed step keeps no output
    // The end of the output was read for the failure's snippet, past the 3 MB not kept.
    CHECK(std::string(loud.at("error").as_string()).find("TAIL-MARK") != std::string::npos);
    CHECK(boost::json::serialize(steps.at(1).at("output")) == "1");
    const std::string id(result.at("session_id").as_string());
    std::ifstream record(dir.root / "sessions" / id / "slurm-jobs");
    std::string name;
    std::getline(record, name);
    REQUIRE(name.starts_with(id + "-"));
    CHECK_FALSE(fs::exists(shared / "jobs" / name));  // the session's job directory went, once empty
    CHECK(fs::is_directory(shared / "jobs"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: sessions clean removes a killed run's job files from the shared directory, never through a link") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto shared = dir.root / "shared", sessions = dir.root / "sessions", victim = dir.root / "victim";
    fs::create_directories(victim);
    std::ofstream(victim / "precious") << "keep me";
    std::ofstream(dir.root / "slow.yaml") << "name: slow\nsteps:\n  - id: s\n    command: touch '"
                                          << (dir.root / "started").string() << "'; echo secret-output; sleep 60\n";
    std::string killed;
    {
      arun::test::background_arun arun({"-q", "--session-dir", sessions.string(), "--executor", "slurm", "--shared-dir",
                                        shared.string(), "-C", dir.root.string(), (dir.root / "slow.yaml").string()},
                                       dir.root, cluster.env());
      REQUIRE(wait_for([&] { return fs::exists(dir.root / "started"); }, 30s));
      ::kill(arun.pid, SIGKILL);
      (void)arun.wait_exit(10s);
      killed = only_session(sessions);
    }
    cluster.cancel_all();
    REQUIRE(cluster.wait_queue_empty(15s));
    // The session's job directory, by the name the session keeps (SESSION-RANDOM).
    auto jobs_of = [&](const std::string& id) {
      std::ifstream in(sessions / id / "slurm-jobs");
      std::string name;
      std::getline(in, name);
      return shared / "jobs" / name;
    };
    const auto left = jobs_of(killed);
    REQUIRE(fs::is_directory(left));
    // A link planted among the job files: its target stays.
    fs::create_directory_symlink(victim, left / "planted");
    // A completed session whose job directory someone replaced by a link to elsewhere.
    std::ofstream(dir.root / "quick.yaml") << "name: quick\nsteps:\n  - id: q\n    command: echo hi\n";
    const auto quick = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", sessions.string(),
                                             "--executor", "slurm", "--shared-dir", shared.string(), "quick.yaml"},
                                            dir.root.string(), 60s, cluster.env());
    REQUIRE(quick.exit_code == 0);
    const std::string other(arun::test::result_json(quick).at("session_id").as_string());
    const auto other_jobs = jobs_of(other);
    CHECK_FALSE(fs::exists(other_jobs));  // its own run removed its files
    fs::create_directory_symlink(victim, other_jobs);

    const auto clean = arun::test::run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", sessions.string()},
                                            dir.root.string(), 60s, cluster.env());
    INFO("clean: " << clean.err);
    CHECK(clean.exit_code == 0);
    CHECK_FALSE(fs::exists(left));
    CHECK(fs::is_symlink(other_jobs));  // left alone, and said
    CHECK(clean.err.find("left " + other_jobs.string() + " alone: it is a symbolic link") != std::string::npos);
    CHECK(arun::test::read_text(victim / "precious") == "keep me");
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a held job is shown pending with its reason and fails at --pending-timeout, kept by resume") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto sessions = dir.root / "sessions";
    // Pending for two minutes (BeginTime) unless held first; never run here.
    std::ofstream(dir.root / "later.yaml") << "name: later\nsteps:\n  - id: wait\n    resources: {extra: [\"--begin=now+120\"]}\n"
                                              "    command: touch ran\n";
    std::string id;
    {
      arun::test::background_arun arun({"--progress", "live", "--output-format", "json", "--session-dir", sessions.string(),
                                        "--executor", "slurm", "--pending-timeout", "8s", "-C", dir.root.string(),
                                        (dir.root / "later.yaml").string()},
                                       dir.root, [&] {
                                         auto env = cluster.env();
                                         env.push_back("COLUMNS=200");
                                         return env;
                                       }());
      std::vector<std::string> queued;
      REQUIRE(wait_for([&] { return !(queued = cluster.queue()).empty(); }, 30s));
      const auto hold = cluster.run_client({"scontrol", "hold", queued.front()});
      REQUIRE(hold.exit_code == 0);
      const auto status = arun.wait_exit(60s);
      const auto err = arun::test::read_text(arun.err);
      INFO("stderr: " << err);
      CHECK(status == 1);
      // The status line and the warning name the hold.
      CHECK(err.find("wait pending (JobHeldAdmin)") != std::string::npos);
      CHECK(err.find("is pending (JobHeldAdmin)") != std::string::npos);
      const auto out = arun::test::read_text(arun.out);
      const auto result = boost::json::parse(out).as_object();
      const auto error = std::string(result.at("step_results").as_array().at(0).at("error").as_string());
      CHECK(error.find("pending (JobHeldAdmin): cancelled at --pending-timeout 8 s") != std::string::npos);
      id = std::string(result.at("session_id").as_string());
    }
    REQUIRE(cluster.wait_queue_empty(15s));
    // The resume keeps the run's --pending-timeout.
    const auto resumed = arun::test::run_arun({"resume", id, "-q", "--output-format", "json", "--session-dir",
                                               sessions.string()},
                                              dir.root.string(), 60s, cluster.env());
    INFO("resume: " << resumed.err);
    CHECK(resumed.exit_code == 1);
    const auto result = arun::test::result_json(resumed);
    const auto error = std::string(result.at("step_results").as_array().at(0).at("error").as_string());
    CHECK(error.find("pending (BeginTime): cancelled at --pending-timeout 8 s") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.root / "ran"));
    CHECK(cluster.wait_queue_empty(15s));
  }
  CHECK(arun::test::leftover_processes().empty());
}
