// `arun --executor slurm` against a private Slurm cluster (tests/support/slurm_cluster.hpp):
// a recipe of every control-flow form gives the same results as on the local executor, each
// leaf step is a Slurm job, and no job is left behind.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "slurm_cluster.hpp"
#include "temp_dir.hpp"

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::slurm_cluster;

namespace {

constexpr const char* forms_recipe = R"YAML(name: forms
context:
  items: [a, b, c]
steps:
  - id: first
    command: echo hello
    output: greeting
  - id: skipped
    condition: "greeting == 'nope'"
    command: echo never
  - id: each
    foreach: "{{items}}"
    parallel: true
    command: echo "item {{item}} after {{greeting}}"
  - id: g1
    parallel_group: g
    command: echo one
  - id: g2
    parallel_group: g
    command: echo two >&2; echo two
  - id: flaky
    command: |
      n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count
      [ "$n" -ge 1 ] || exit 1
      echo "worked on try $((n+1))"
    retry:
      max_attempts: 3
      initial_delay: 0
  - id: sub
    recipe: "./child.yaml"
    context:
      who: "{{greeting}}"
  - id: tolerated
    command: exit 4
    on_error: continue
  - id: last
    command: pwd; echo "$RECIPE_VAR_greeting"
)YAML";

constexpr const char* child_recipe = R"(name: child
context:
  who: nobody
steps:
  - id: hi
    command: echo "child says hi to {{who}}"
)";

// What must be the same wherever the steps ran: each step's status, output and exit code,
// and the run's context (the working directory written as DIR).
std::string summary(const boost::json::object& result, const std::string& dir) {
  std::string text = std::string(result.at("status").as_string()) + "\n";
  for (const auto& v : result.at("step_results").as_array()) {
    const auto& s = v.as_object();
    text += boost::json::serialize(s.at("step_id")) + " " + boost::json::serialize(s.at("status")) + " " +
            (s.contains("output") ? boost::json::serialize(s.at("output")) : "-") + " " +
            (s.contains("exit_code") ? boost::json::serialize(s.at("exit_code")) : "-") + "\n";
  }
  text += boost::json::serialize(result.at("context"));
  for (auto at = text.find(dir); at != std::string::npos; at = text.find(dir)) text.replace(at, dir.size(), "DIR");
  return text;
}

// The session's job directory below `jobs`: its name (SESSION-RANDOM) is kept in the session.
fs::path session_jobs(const fs::path& jobs, const fs::path& session) {
  std::ifstream in(session / "slurm-jobs");
  std::string name;
  std::getline(in, name);
  CHECK(name.size() > 17);
  return jobs / name;
}

}  // namespace

TEST_CASE("slurm run: a recipe of every control-flow form gives the local results, one job per leaf") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    std::string summaries[2];
    for (const bool on_slurm : {false, true}) {
      const auto work = dir.root / (on_slurm ? "slurm" : "local");
      fs::create_directories(work);
      std::ofstream(work / "main.yaml") << forms_recipe;
      std::ofstream(work / "child.yaml") << child_recipe;
      std::vector<std::string> args = {"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                       "-C", work.string(), "main.yaml"};
      if (on_slurm) args.insert(args.end(), {"--executor", "slurm"});
      const auto r = arun::test::run_arun(args, work.string(), std::chrono::seconds(90), cluster.env());
      INFO("stderr: " << r.err << "\n" << cluster.log_tail());
      CHECK(r.exit_code == 0);
      const auto result = arun::test::result_json(r);
      summaries[on_slurm] = summary(result, work.string());
      if (on_slurm) {
        // Every leaf instance (each try of the retried step too) was a job of its own.
        const std::string id(result.at("session_id").as_string());
        std::ifstream log(dir.root / "sessions" / id / "arun.log");
        const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        CHECK(text.find("slurm: 11 jobs submitted") != std::string::npos);  // first, each x3, g1, g2, flaky x2, hi, tolerated, last
        // Their files left the shared directory once the journal had their results (the
        // session's job directory too, once empty).
        const auto jobs = session_jobs(dir.root / "sessions" / id / "jobs", dir.root / "sessions" / id);
        CHECK_FALSE(fs::exists(jobs));
      }
    }
    CHECK(summaries[1] == summaries[0]);
    CHECK(cluster.queue().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a step's files (a large body, a large value) are below the shared directory") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto shared = dir.root / "shared";
    // A body over 64 KiB runs from a file ($0 names it); a value over 96 KiB arrives by file.
    const std::string padding(70 * 1024, '#');
    std::ofstream(dir.root / "big.yaml") << "name: big\ncontext:\n  blob: \"" << std::string(100 * 1024, 'x')
                                         << "\"\nsteps:\n  - id: s\n    command: |\n      echo \"$0\"\n"
                                         << "      v={{blob}}; echo \"${#v}\"\n      : '" << padding << "'\n";
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                         "--executor", "slurm", "--shared-dir", shared.string(), "big.yaml"},
                                        dir.root.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    const auto output = std::string(result.at("step_results").as_array().at(0).at("output").as_string());
    CHECK(output.starts_with((shared / "tmp" / "arun-body-").string()));
    CHECK(output.ends_with("\n102400"));
    CHECK(fs::exists(shared / "jobs"));
    CHECK(cluster.queue().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: a resumed run goes on on the cluster and in the shared directory it started with") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto shared = dir.root / "shared", sessions = dir.root / "sessions";
    std::ofstream(dir.root / "gate.yaml") << "name: gate\nsteps:\n  - id: before\n    command: echo one\n"
                                             "  - id: ship\n    requires_approval: true\n    approval_prompt: ok?\n"
                                             "    command: echo \"$SLURM_JOB_ID\"\n";
    const auto run = [&](std::vector<std::string> args) {
      args.insert(args.end(), {"-q", "--output-format", "json", "--session-dir", sessions.string()});
      return arun::test::run_arun(args, dir.root.string(), std::chrono::seconds(90), cluster.env());
    };
    const auto first = run({"gate.yaml", "--executor", "slurm", "--shared-dir", shared.string(), "--no-input"});
    INFO("first: " << first.err);
    REQUIRE(first.exit_code == 5);  // waiting for approval
    const auto id = std::string(arun::test::result_json(first).at("session_id").as_string());
    // Neither --executor nor --shared-dir again: the session remembers both.
    const auto second = run({"resume", id, "--yes"});
    INFO("second: " << second.err);
    REQUIRE(second.exit_code == 0);
    const auto result = arun::test::result_json(second);
    const auto& steps = result.at("step_results").as_array();
    REQUIRE(steps.size() == 2);
    CHECK(steps.at(1).at("output").is_number());  // $SLURM_JOB_ID: the step ran as a Slurm job
    // Each run removed its jobs' files once the journal had their results.
    CHECK_FALSE(fs::exists(session_jobs(shared / "jobs", sessions / id)));
    CHECK(cluster.queue().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm run: without Slurm's clients on PATH the run stops before any step, saying which is missing") {
  arun::test::temp_dir dir;
  std::ofstream(dir.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: touch ran\n";
  const auto r = arun::test::run_arun({"r.yaml", "--executor", "slurm", "--session-dir", (dir.root / "sessions").string()},
                                      dir.root.string(), std::chrono::seconds(30), {"PATH=" + dir.root.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--executor slurm needs Slurm's sbatch on PATH") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.root / "ran"));
}

TEST_CASE("slurm run: steps with isolation run as jobs in their worktrees under the session and commit there") {
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {
    WARN("no Slurm here: " << why);
    return;
  }
  {
    slurm_cluster cluster;
    arun::test::temp_dir dir;
    const auto repo = dir.root / "repo";
    fs::create_directories(repo);
    REQUIRE(std::system(("cd '" + repo.string() + "' && git init -q && echo base > README.md && git add README.md && "
                         "git -c user.name=t -c user.email=t@t commit -qm base").c_str()) == 0);
    std::ofstream(dir.root / "iso.yaml") << "name: iso\nsteps:\n  - id: w\n    foreach: [0, 1, 2]\n    parallel: true\n"
                                            "    isolation: worktree\n    command: echo {{item}} > mine.txt; pwd\n";
    const auto r = arun::test::run_arun({"-q", "--output-format", "json", "--session-dir", (dir.root / "sessions").string(),
                                         "--executor", "slurm", "-C", repo.string(), (dir.root / "iso.yaml").string()},
                                        repo.string(), std::chrono::seconds(90), cluster.env());
    INFO("stderr: " << r.err << "\n" << cluster.log_tail());
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    const std::string id(result.at("session_id").as_string());
    const auto& outputs = result.at("step_results").as_array().at(0).at("output").as_array();
    CHECK(std::string(outputs.at(1).as_string()) == (dir.root / "sessions" / id / "worktrees" / "w[1]").string());
    for (int i = 0; i < 3; ++i) {
      const auto show = "cd '" + repo.string() + "' && test \"$(git show arun/" + id + "/w/" + std::to_string(i) +
                        ":mine.txt)\" = " + std::to_string(i);
      CHECK(std::system(show.c_str()) == 0);
    }
    CHECK(std::system(("test \"$(git -C '" + repo.string() + "' worktree list | wc -l)\" = 1").c_str()) == 0);
    CHECK(cluster.queue().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}
