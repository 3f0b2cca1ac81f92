// Sessions end to end (docs/sessions.md): the session directory of a run, resume after a SIGKILL,
// a failure or an interrupt for every control-flow form, --retry-failed, refusals (lock,
// format, missing copy), recipe copies, torn journals, and `sessions list|show|clean`.
// Every test that starts children checks that none is left.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

using arun::test::read_text;

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::map<std::string, int> counts(const std::vector<std::string>& lines) {
  std::map<std::string, int> out;
  for (const auto& l : lines) ++out[l];
  return out;
}

// A project: recipes, a log the steps append their instance ids to, a session root.
struct session_project {
  temp_dir dir{"arun-e2e-session"};
  fs::path root = dir.root;
  fs::path sessions = root / "sessions";
  fs::path log = root / "log.txt";

  std::string write(const std::string& name, const std::string& text) const { return dir.write(name, text); }

  arun::test::arun_run run(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string(), "--output-format", "json", "-q"});
    return run_arun(args, root.string());
  }

  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(sessions, ec)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string only_id() const {
    const auto all = ids();
    REQUIRE(all.size() == 1);
    return all[0];
  }

  json::object state(const std::string& id) const {
    return json::parse(read_text(sessions / id / "state.json")).as_object();
  }
};

json::object result_of(const arun::test::arun_run& r) { return arun::test::result_json(r); }

std::string status_of(const json::object& result, const std::string& step) {
  for (const auto& s : result.at("step_results").as_array())
    if (s.at("step_id").as_string() == step) return std::string(s.at("status").as_string());
  return "<missing>";
}

// A leaf step that logs its instance id, sleeps, and outputs VALUE.
std::string leaf(const std::string& id, const std::string& value, const std::string& extra = "") {
  return "  - id: " + id + "\n    command: \"echo {{step.id}} >> {{log}}; echo " + value + "\"\n    output: " + id +
         "_out\n" + extra;
}

// Four more spaces in front of every line: a step list inside a stage.
std::string indented(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += "    " + line + "\n";
  return out;
}

}  // namespace

TEST_CASE("sessions: a run keeps its recipe copy journal state and events") {
  session_project p;
  const auto text = "name: kept\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" + leaf("a", "1") + leaf("b", "2");
  const auto file = p.write("kept.yaml", text);
  auto r = p.run({file});
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  const auto id = p.only_id();
  CHECK(result.at("session_id").as_string() == id);
  const auto dir = p.sessions / id;
  CHECK(read_text(dir / "recipe.yaml") == text);
  const auto journal = lines_of(dir / "journal.jsonl");
  REQUIRE(journal.size() == 2);
  CHECK(json::parse(journal[0]).at("instance") == "a");
  CHECK(json::parse(journal[1]).at("delta").at("b_out") == 2);
  const auto state = p.state(id);
  CHECK(state.at("status") == "completed");
  CHECK(state.at("format") == 1);
  CHECK(state.at("context").at("b_out") == 2);
  CHECK(state.at("recipe_path").as_string() == fs::path(file).lexically_normal().string());
  const auto events = read_text(dir / "events.jsonl");
  CHECK(events.find("\"recipe_end\"") != std::string::npos);
  CHECK(fs::exists(dir / "lock"));

  SECTION("--dry-run creates no session") {
    fs::remove_all(p.sessions);
    CHECK(p.run({file, "--dry-run"}).exit_code == 0);
    CHECK(p.ids().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: resume after SIGKILL never runs a recorded instance again") {
  session_project p;
  std::string items;
  for (int i = 0; i < 12; ++i) items += (items.empty() ? "" : ", ") + std::to_string(i);
  const auto file = p.write("fan.yaml", "name: fan\ncontext:\n  log: " + p.log.string() + "\n  items: [" + items +
                                            "]\nsteps:\n" + leaf("first", "0") +
                                            "  - id: fan\n    foreach: \"{{items}}\"\n    parallel: 3\n"
                                            "    command: \"echo {{step.id}} >> {{log}}; sleep 0.3; echo {{item}}\"\n"
                                            "    collect: got\n" +
                                            leaf("last", "9"));
  {
    arun::test::background_arun arun({file, "--session-dir", p.sessions.string(), "-q"}, p.root);
    // Wait until some iterations are recorded, then kill arun without warning.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      const auto ids = p.ids();
      if (!ids.empty() && lines_of(p.sessions / ids[0] / "journal.jsonl").size() >= 5) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(arun.pid, SIGKILL);
    CHECK(arun.wait_exit(std::chrono::seconds(10)) == 128 + SIGKILL + 1000);
  }
  // The orphaned steps of the killed arun finish on their own (at most 0.3 s).
  CHECK(arun::test::leftover_processes(std::chrono::milliseconds(5000)).empty());
  const auto id = p.only_id();
  std::vector<std::string> recorded;
  for (const auto& line : lines_of(p.sessions / id / "journal.jsonl"))
    recorded.emplace_back(json::parse(line).at("instance").as_string());
  REQUIRE(recorded.size() >= 5);
  CHECK(p.state(id).at("status") == "running");  // the killed run never wrote its end

  auto r = p.run({"resume", id});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  CHECK(result.at("context").at("got").as_array().size() == 12);
  CHECK(result.at("context").at("last_out") == 9);
  const auto logged = counts(lines_of(p.log));
  for (const auto& instance : recorded) {
    INFO(instance);
    CHECK(logged.at(instance) == 1);  // recorded before the kill: never again
  }
  for (int i = 0; i < 12; ++i) CHECK(logged.contains("fan[" + std::to_string(i) + "]"));
  CHECK(logged.at("last") == 1);
  CHECK(p.state(id).at("status") == "completed");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: resume re-runs the fatal failure and what follows for every control-flow form") {
  session_project p;
  const auto gate = (p.root / "fixed").string();
  // `flaky` fails until the file `fixed` exists.
  const auto flaky = "  - id: flaky\n    command: \"echo {{step.id}} >> {{log}}; test -f " + gate + "\"\n";
  const auto head = "context:\n  log: " + p.log.string() + "\n";
  struct form {
    std::string name, text;
    std::vector<std::string> once;  ///< completed before the failure: logged once overall
  };
  const std::vector<form> forms = {
      {"sequential", "name: seq\n" + head + "steps:\n" + leaf("a", "1") + flaky + leaf("b", "2"), {"a", "b"}},
      {"parallel group",
       "name: group\n" + head + "steps:\n" + leaf("a", "1", "    parallel_group: g\n") + leaf("c", "3", "    parallel_group: g\n") +
           "  - id: flaky\n    parallel_group: g\n    command: \"echo {{step.id}} >> {{log}}; sleep 0.3; test -f " + gate +
           "\"\n" + leaf("b", "2"),
       {"a", "c", "b"}},
      {"dag", "name: dag\nexecution: dag\n" + head + "steps:\n" + leaf("a", "1") + flaky +
                  "    depends_on: [a]\n" + leaf("b", "2", "    depends_on: [flaky]\n"),
       {"a", "b"}},
      {"nested sub-recipe", "name: outer\n" + head + "steps:\n" + leaf("a", "1") + "  - id: call\n    recipe: inner.yaml\n" +
                                leaf("b", "2"),
       {"a", "call/x", "b"}},
      {"stages", "name: staged\n" + head + "stages:\n  - name: one\n    steps:\n" + indented(leaf("a", "1")) +
                     "  - name: two\n    steps:\n" + indented(flaky) + "  - name: three\n    steps:\n" +
                     indented(leaf("b", "2")),
       {"a", "b"}},
      {"foreach with steps",
       "name: loop\n" + head + "steps:\n  - id: loop\n    foreach: [1, 2, 3]\n    steps:\n"
       "      - id: x\n        command: \"echo {{step.id}} >> {{log}}; echo {{item}}\"\n"
       "      - id: maybe\n        command: \"echo {{step.id}} >> {{log}}; test {{item}} -lt 3 || test -f " + gate + "\"\n",
       {"loop[0]/x", "loop[1]/x", "loop[2]/x", "loop[0]/maybe", "loop[1]/maybe"}},
  };
  p.write("inner.yaml", "name: inner\nsteps:\n" + leaf("x", "7") + flaky);
  for (const auto& f : forms) {
    DYNAMIC_SECTION(f.name) {
      const auto file = p.write("form.yaml", f.text);
      auto first = p.run({file});
      INFO(first.err);
      REQUIRE(first.exit_code == 1);
      const auto id = p.only_id();
      CHECK(p.state(id).at("status") == "failed");
      std::ofstream(gate) << "fixed\n";
      auto second = p.run({"resume", id});
      INFO(second.err);
      REQUIRE(second.exit_code == 0);
      CHECK(p.state(id).at("status") == "completed");
      const auto logged = counts(lines_of(p.log));
      for (const auto& instance : f.once) {
        INFO(instance);
        CHECK(logged.count(instance) == 1);
        CHECK(logged.at(instance) == 1);
      }
      if (f.name == "nested sub-recipe") CHECK(logged.at("call/flaky") == 2);
      else if (f.name == "foreach with steps") CHECK(logged.at("loop[2]/maybe") == 2);
      else CHECK(logged.at("flaky") == 2);
    }
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: non-fatal failures stay failed unless --retry-failed") {
  session_project p;
  const auto file = p.write("soft.yaml", "name: soft\ncontext:\n  log: " + p.log.string() +
                                             "\nsteps:\n  - id: soft\n    on_error: continue\n"
                                             "    command: \"echo {{step.id}} >> {{log}}; exit 3\"\n" +
                                             leaf("a", "1") + "  - id: stop\n    command: \"test -f " +
                                             (p.root / "go").string() + "\"\n");
  REQUIRE(p.run({file}).exit_code == 1);
  const auto id = p.only_id();
  std::ofstream(p.root / "go") << "";
  auto plain = p.run({"resume", id});
  REQUIRE(plain.exit_code == 0);
  CHECK(status_of(result_of(plain), "soft") == "failed");
  CHECK(counts(lines_of(p.log)).at("soft") == 1);
  // A completed session has nothing left; a new failed one retries with --retry-failed.
  fs::remove_all(p.sessions);
  fs::remove(p.root / "go");
  REQUIRE(p.run({file}).exit_code == 1);
  std::ofstream(p.root / "go") << "";
  auto retried = p.run({"resume", p.only_id(), "--retry-failed"});
  REQUIRE(retried.exit_code == 0);
  CHECK(counts(lines_of(p.log)).at("soft") == 3);
  CHECK(counts(lines_of(p.log)).at("a") == 2);  // one per session
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: --retry-failed runs again what a retried skip_remaining failure skipped") {
  session_project p;
  const auto fixed = (p.root / "fixed").string();
  const auto file = p.write(
      "skip.yaml", "name: skip\ncontext:\n  log: " + p.log.string() +
                       "\nsteps:\n  - id: first\n    command: \"echo first >> {{log}}\"\n"
                       "  - id: check\n    on_error: skip_remaining\n    command: \"echo check >> {{log}}; test -f " + fixed +
                       "\"\n    output: checked\n"
                       "  - id: later\n    command: \"echo later >> {{log}}\"\n"
                       "  - id: only-if-checked\n    condition: \"checked is not None\"\n"
                       "    command: \"echo conditional >> {{log}}\"\n");
  const auto first = p.run({file});
  REQUIRE(first.exit_code == 0);  // skip_remaining ends the run early, with success
  CHECK(status_of(result_of(first), "later") == "skipped");
  const auto id = p.only_id();
  std::ofstream(fixed) << "";
  // A plain resume keeps the failure, so what it skipped stays skipped.
  const auto plain = p.run({"resume", id});
  CHECK(plain.exit_code == 0);
  CHECK(counts(lines_of(p.log)).count("later") == 0);
  const auto retried = p.run({"resume", id, "--retry-failed"});
  REQUIRE(retried.exit_code == 0);
  const auto result = result_of(retried);
  CHECK(status_of(result, "check") == "completed");
  CHECK(status_of(result, "later") == "completed");
  CHECK(status_of(result, "only-if-checked") == "completed");
  const auto log = counts(lines_of(p.log));
  CHECK(log.at("first") == 1);
  CHECK(log.at("check") == 2);
  CHECK(log.at("later") == 1);
  CHECK(log.at("conditional") == 1);
  // Inside a loop body the failure ended the loop and skipped the rest of the recipe: both are
  // decided again.
  fs::remove_all(p.sessions);
  fs::remove(fixed);
  const auto looped = p.write(
      "loop.yaml", "name: loop\ncontext:\n  log: " + p.log.string() +
                       "\nsteps:\n  - id: fan\n    foreach: [1, 2, 3]\n    as: x\n    steps:\n"
                       "      - id: a\n        on_error: skip_remaining\n        command: \"test -f " + fixed +
                       " || test {{x}} != 1\"\n      - id: b\n        command: \"echo b{{x}} >> {{log}}\"\n"
                       "  - id: after\n    command: \"echo after >> {{log}}\"\n");
  const auto looped_first = p.run({looped});
  REQUIRE(looped_first.exit_code == 0);
  CHECK(status_of(result_of(looped_first), "after") == "skipped");
  std::ofstream(fixed) << "";
  const auto again = p.run({"resume", p.only_id(), "--retry-failed"});
  REQUIRE(again.exit_code == 0);
  CHECK(status_of(result_of(again), "after") == "completed");
  const auto looped_log = counts(lines_of(p.log));
  for (const auto* line : {"b1", "b2", "b3", "after"}) CHECK(looped_log.at(line) == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: --retry-failed on a completed session runs its failed items again, and only those") {
  session_project p;
  // A fan-out of 12 under on_error: continue whose items 3 and 7 fail until `fixed` exists.
  const auto fixed = (p.root / "fixed").string();
  const auto file = p.write("fan.yaml", "name: fan\ncontext:\n  log: " + p.log.string() +
                                            "\nsteps:\n  - id: fan\n    foreach: '[0,1,2,3,4,5,6,7,8,9,10,11]'\n"
                                            "    as: n\n    parallel: 4\n    on_error: continue\n"
                                            "    command: \"echo {{n}} >> {{log}}; case {{n}} in 3|7) echo checking >&2; test -f " +
                                            fixed + ";; esac\"\n");
  const auto first = p.run({file});
  REQUIRE(first.exit_code == 0);  // on_error: continue: the run completed
  const auto id = p.only_id();
  // The result names the failed items, each with its log.
  const auto first_result = result_of(first);
  const auto& failed = first_result.at("step_results").at(0).at("failed_instances").as_array();
  REQUIRE(failed.size() == 2);
  CHECK(failed.at(0).at("instance") == "fan[3]");
  CHECK(failed.at(1).at("instance") == "fan[7]");
  CHECK(failed.at(1).at("error") == "step 'fan[7]' (item: 7): exit code 1");
  CHECK(std::string(failed.at(1).at("log").as_string()) == (p.sessions / id / "logs" / "fan[7].err").string());
  // sessions show names them.
  const auto shown = run_arun({"sessions", "show", id, "--session-dir", p.sessions.string()}, p.root.string());
  CHECK_THAT(shown.out, Catch::Contains("failed   step 'fan[3]' (item: 3): exit code 1\nfailed   step 'fan[7]' (item: 7): exit code 1\n"));
  // A plain resume says there is nothing to do, and how to retry the failures.
  auto plain = p.run({"resume", id});
  CHECK(plain.exit_code == 0);
  CHECK_THAT(plain.err, Catch::Contains("2 instances failed without stopping it"));
  CHECK_THAT(plain.err, Catch::Contains("arun resume " + id + " --retry-failed"));
  CHECK(lines_of(p.log).size() == 12);
  std::ofstream(fixed) << "";
  auto retried = p.run({"resume", id, "--retry-failed"});
  REQUIRE(retried.exit_code == 0);
  const auto log = counts(lines_of(p.log));
  CHECK(log.at("3") == 2);
  CHECK(log.at("7") == 2);
  for (const auto* kept : {"0", "1", "2", "4", "5", "6", "8", "9", "10", "11"}) CHECK(log.at(kept) == 1);
  const auto result = result_of(retried);
  CHECK(result.at("step_results").at(0).at("iterations").at("completed") == 12);
  // Nothing failed now: another retry has nothing to do.
  auto again = p.run({"resume", id, "--retry-failed"});
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.err, Catch::Contains("no instance of it failed; there is nothing to retry"));
  CHECK(lines_of(p.log).size() == 14);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: a resume runs with the run's -j, tags and limits unless it gives them, and later resumes keep them") {
  session_project p;
  const auto go = (p.root / "go").string(), go2 = (p.root / "go2").string();
  const auto file = p.write("opts.yaml", "name: opts\ncontext:\n  log: " + p.log.string() +
                                             "\nsteps:\n  - id: a\n    command: \"test -f " + go +
                                             "\"\n  - id: tagged\n    when_tags: [slow]\n    command: \"echo tagged >> {{log}}\"\n"
                                             "  - id: b\n    command: \"test -f " + go2 + "\"\n");
  REQUIRE(p.run({file, "-j", "3", "--exclude-tags", "slow", "--kill-grace", "1.5"}).exit_code == 1);
  const auto id = p.only_id();
  const auto execution = p.state(id).at("invocation").at("execution").as_object();
  CHECK(execution.at("max_concurrent") == 3);
  CHECK(execution.at("kill_grace") == 1.5);
  CHECK(execution.at("exclude_tags") == json::array{"slow"});
  const auto log_of = [&] { return read_text(p.sessions / id / "arun.log"); };
  // A plain resume: -j 3 and the excluded tag hold (the tagged step stays skipped).
  std::ofstream(go) << "";
  auto r = p.run({"resume", id});
  CHECK(r.exit_code == 1);  // b fails now
  CHECK(status_of(result_of(r), "tagged") == "skipped");
  CHECK_FALSE(fs::exists(p.log));
  auto log = log_of();
  CHECK(log.rfind(", -j 3") != std::string::npos);
  // A resume that gives -j: it wins, and the next resume keeps it.
  r = p.run({"resume", id, "-j", "5"});
  CHECK(r.exit_code == 1);
  log = log_of();
  CHECK(log.substr(log.rfind("runs 'opts'")).find(", -j 5") != std::string::npos);
  std::ofstream(go2) << "";
  r = p.run({"resume", id});
  CHECK(r.exit_code == 0);
  log = log_of();
  CHECK(log.substr(log.rfind("runs 'opts'")).find(", -j 5") != std::string::npos);
  CHECK(p.state(id).at("invocation").at("execution").at("max_concurrent") == 5);
  CHECK(status_of(result_of(r), "tagged") == "skipped");
  // An empty tag is no filter: `--exclude-tags ''` runs the tagged step.
  fs::remove_all(p.sessions);
  CHECK(p.run({file, "--exclude-tags", ""}).exit_code == 0);
  CHECK(lines_of(p.log) == std::vector<std::string>{"tagged"});
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: resume uses the session's copies of the recipe and its sub-recipes") {
  session_project p;
  const auto stop = (p.root / "go").string();
  const auto file = p.write("main.yaml", "name: main\ncontext:\n  log: " + p.log.string() +
                                             "\nsteps:\n  - id: call\n    recipe: sub.yaml\n  - id: stop\n    command: \"test -f " +
                                             stop + "\"\n  - id: after\n    command: echo original\n    output: said\n");
  p.write("sub.yaml", "name: sub\nsteps:\n  - id: inner\n    command: echo sub-original\n    output: inner_said\n");
  REQUIRE(p.run({file}).exit_code == 1);
  const auto id = p.only_id();
  // Edit both files and remove the sub-recipe: the session keeps what it started with.
  p.write("main.yaml", "name: main\nsteps:\n  - id: changed\n    command: echo changed\n");
  fs::remove(p.root / "sub.yaml");
  std::ofstream(stop) << "";
  auto r = p.run({"resume", id, "--set", "extra=5"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  CHECK(result.at("context").at("said") == "original");
  CHECK(result.at("context").at("inner_said") == "sub-original");
  CHECK(result.at("context").at("extra") == 5);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: resume refuses held, unknown, incompatible and incomplete sessions") {
  session_project p;
  const auto file = p.write("x.yaml", "name: x\nsteps:\n  - id: a\n    command: \"exit 1\"\n");
  REQUIRE(p.run({file}).exit_code == 1);
  const auto id = p.only_id();
  const auto dir = p.sessions / id;
  SECTION("held by a live arun") {
    const int fd = ::open((dir / "lock").c_str(), O_RDWR);
    REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
    auto r = p.run({"resume", id});
    ::close(fd);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is in use by another arun") != std::string::npos);
  }
  SECTION("unknown id") {
    auto r = p.run({"resume", "20990101-000000-000000"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("no session '20990101-000000-000000' in ") != std::string::npos);
  }
  SECTION("another state format") {
    auto state = p.state(id);
    state["format"] = 99;
    std::ofstream(dir / "state.json") << json::serialize(state);
    auto r = p.run({"resume", id});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("has state format 99; this arun reads format 1") != std::string::npos);
  }
  SECTION("the recipe copy is missing") {
    fs::remove(dir / "recipe.yaml");
    auto r = p.run({"resume", id});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("recipe copy") != std::string::npos);
  }
  SECTION("a torn last journal line and a stray temp file are harmless") {
    std::ofstream(dir / "journal.jsonl", std::ios::app) << "{\"instance\":\"zz\",\"sta";
    std::ofstream(dir / "state.json.tmp-1") << "{garbage";
    auto r = p.run({"resume", id});
    CHECK(r.exit_code == 1);  // step a still fails, but the session loads
    CHECK(p.state(id).at("status") == "failed");
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: an interrupt leaves a cancelled session that resume continues") {
  session_project p;
  const auto file = p.write("slow.yaml", "name: slow\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" + leaf("a", "1") +
                                             "  - id: wait\n    command: \"echo {{step.id}} >> {{log}}; sleep 2\"\n" +
                                             leaf("b", "2"));
  {
    arun::test::background_arun arun({file, "--session-dir", p.sessions.string(), "-q", "--kill-grace", "1"}, p.root);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < until && counts(lines_of(p.log)).count("wait") == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::kill(arun.pid, SIGINT);
    CHECK(arun.wait_exit(std::chrono::seconds(30)) == 130);
  }
  const auto id = p.only_id();
  CHECK(p.state(id).at("status") == "cancelled");
  auto r = p.run({"resume", id});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto logged = counts(lines_of(p.log));
  CHECK(logged.at("a") == 1);
  CHECK(logged.at("wait") == 2);
  CHECK(logged.at("b") == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: list show and clean") {
  session_project p;
  const auto ok = p.write("ok.yaml", "name: ok-recipe\nsteps:\n  - id: a\n    command: echo 1\n");
  REQUIRE(p.run({ok}).exit_code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // ids carry the second
  REQUIRE(p.run({ok}).exit_code == 0);
  const auto ids = p.ids();
  REQUIRE(ids.size() == 2);
  const auto root = p.sessions.string();
  auto list = run_arun({"sessions", "list", "--session-dir", root});
  REQUIRE(list.exit_code == 0);
  CHECK(list.out.find(ids[1]) < list.out.find(ids[0]));  // newest first
  CHECK(list.out.find("completed") != std::string::npos);
  CHECK(list.out.find("ok-recipe") != std::string::npos);
  auto show = run_arun({"sessions", "show", ids[0], "--session-dir", root});
  REQUIRE(show.exit_code == 0);
  CHECK(show.out.find("status   completed") != std::string::npos);
  CHECK(show.out.find("recipe_end") != std::string::npos);
  // Clean keeps sessions waiting for approval and sessions a live arun holds.
  auto waiting = p.state(ids[0]);
  waiting["status"] = "waiting_approval";
  std::ofstream(p.sessions / ids[0] / "state.json") << json::serialize(waiting);
  const int fd = ::open((p.sessions / ids[1] / "lock").c_str(), O_RDWR);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  auto clean = run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", root});
  CHECK(clean.exit_code == 0);
  CHECK(p.ids().size() == 2);
  ::close(fd);
  clean = run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", root});
  CHECK(p.ids() == std::vector<std::string>{ids[0]});
  CHECK(clean.out.find("removed " + ids[1]) != std::string::npos);
  // A young session survives --older-than 1.
  REQUIRE(p.run({ok}).exit_code == 0);
  run_arun({"sessions", "clean", "--older-than", "1", "--session-dir", root});
  CHECK(p.ids().size() == 2);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: a gate suspends with exit 5 then approve and resume continue with the message") {
  session_project p;
  const auto file = p.write("gate.yaml", "name: gate\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" + leaf("build", "1") +
                                             "  - id: ship\n    requires_approval: true\n    approval_prompt: \"Ship "
                                             "{{build_out}}?\"\n    command: \"echo {{step.id}} >> {{log}}; echo "
                                             "'{{_approval_message}}'\"\n    output: shipped\n" +
                                             leaf("after", "3"));
  auto first = p.run({file, "--no-input"});
  REQUIRE(first.exit_code == 5);
  auto result = result_of(first);
  CHECK(result.at("status") == "waiting_approval");
  CHECK(result.at("waiting_approval").at("step") == "ship");
  CHECK(result.at("waiting_approval").at("prompt") == "Ship 1?");
  const auto id = p.only_id();
  CHECK(p.state(id).at("status") == "waiting_approval");
  // resume without a decision waits again; deciding needs the session's lock.
  CHECK(p.run({"resume", id, "--no-input"}).exit_code == 5);
  auto approve = run_arun({"approve", id, "--session-dir", p.sessions.string(), "--message", "ship it"});
  REQUIRE(approve.exit_code == 0);
  CHECK(approve.err.find("arun resume " + id) != std::string::npos);
  auto second = p.run({"resume", id});
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  result = result_of(second);
  CHECK(result.at("context").at("shipped") == "ship it");
  CHECK(result.at("context").at("_approval_message") == "ship it");
  const auto logged = counts(lines_of(p.log));
  CHECK(logged.at("build") == 1);
  CHECK(logged.at("ship") == 1);
  CHECK(logged.at("after") == 1);
  const auto history = p.state(id).at("approval_history").as_array();
  REQUIRE(history.size() >= 2);
  CHECK(history.back().at("event") == "approved");
  CHECK(history.back().at("by") == "arun approve");
  // Nothing left to decide.
  CHECK(run_arun({"approve", id, "--session-dir", p.sessions.string()}).exit_code == 2);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: a sub-recipe gate under a parallel foreach waits at every item, decided one by one") {
  session_project p;
  p.write("review.yaml", "name: review\nsteps:\n" + leaf("work", "w") +
                             "  - id: review\n    requires_approval: true\n    approval_prompt: \"Ship {{item}}?\"\n" +
                             leaf("ship", "s"));
  const auto file = p.write("fan.yaml", "name: fan\ncontext:\n  log: " + p.log.string() +
                                            "\n  items: [a, b, c]\nsteps:\n  - id: fan\n    foreach: \"{{items}}\"\n"
                                            "    parallel: 3\n    type: recipe\n    recipe: review.yaml\n"
                                            "    context:\n      item: \"{{item}}\"\n" +
                                            leaf("after", "done"));
  auto first = p.run({file, "--no-input"});
  REQUIRE(first.exit_code == 5);
  auto result = result_of(first);
  CHECK(result.at("status") == "waiting_approval");
  CHECK(status_of(result, "fan") == "not_run");
  CHECK(status_of(result, "after") == "not_run");
  const auto& gates = result.at("waiting_approvals").as_array();
  REQUIRE(gates.size() == 3);
  CHECK(gates.at(0).at("step") == "fan[0]/review");
  CHECK(gates.at(2).at("step") == "fan[2]/review");
  CHECK(gates.at(1).at("prompt") == "Ship b?");
  CHECK(result.at("waiting_approval") == gates.at(0));
  const auto id = p.only_id();
  CHECK(p.state(id).at("waiting").as_array().size() == 3);
  const auto shown = run_arun({"sessions", "show", id, "--session-dir", p.sessions.string()});
  CHECK(shown.out.find("waiting  approval at fan[2]/review: Ship c?") != std::string::npos);
  // Three gates wait: which one must be said.
  auto unsure = run_arun({"approve", id, "--session-dir", p.sessions.string()});
  CHECK(unsure.exit_code == 2);
  CHECK(unsure.err.find("waits at 3 gates (fan[0]/review, fan[1]/review, fan[2]/review)") != std::string::npos);
  CHECK(run_arun({"approve", id, "--session-dir", p.sessions.string(), "--step", "fan[9]/review"}).exit_code == 2);
  auto one = run_arun({"approve", id, "--session-dir", p.sessions.string(), "--step", "fan[1]/review"});
  REQUIRE(one.exit_code == 0);
  CHECK(one.err.find("2 more gates still wait") != std::string::npos);
  auto second = p.run({"resume", id, "--no-input"});
  REQUIRE(second.exit_code == 5);
  result = result_of(second);
  REQUIRE(result.at("waiting_approvals").as_array().size() == 2);
  CHECK(result.at("waiting_approvals").at(1).at("step") == "fan[2]/review");
  // A glob decides the rest; brackets in it are literal.
  REQUIRE(run_arun({"approve", id, "--session-dir", p.sessions.string(), "--step", "fan[*]/review"}).exit_code == 0);
  auto third = p.run({"resume", id, "--no-input"});
  INFO(third.err);
  REQUIRE(third.exit_code == 0);
  CHECK(status_of(result_of(third), "fan") == "completed");
  // Each item's work ran once, before its gate; each shipped once, after it.
  const auto logged = counts(lines_of(p.log));
  for (const std::string item : {"0", "1", "2"}) {
    CHECK(logged.at("fan[" + item + "]/work") == 1);
    CHECK(logged.at("fan[" + item + "]/ship") == 1);
  }
  CHECK(logged.at("after") == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: a denied gate is passed over by --all, a gate named after its denial is refused") {
  session_project p;
  const std::string gate = "    requires_approval: true\n    approval_prompt: Go?\n    parallel_group: g\n"
                           "    on_approval_denied: continue\n";
  const auto file = p.write("group.yaml", "name: group\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" +
                                              leaf("left", "l", gate) + leaf("right", "r", gate));
  REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
  const auto id = p.only_id();
  const std::vector<std::string> where = {"--session-dir", p.sessions.string()};
  auto args = [&](std::vector<std::string> a) {
    a.insert(a.end(), where.begin(), where.end());
    return a;
  };
  REQUIRE(run_arun(args({"deny", id, "--step", "left"})).exit_code == 0);
  auto all = run_arun(args({"approve", id, "--all"}));
  REQUIRE(all.exit_code == 0);
  CHECK(all.err.find("approved right in session") != std::string::npos);
  CHECK(all.err.find("still wait") == std::string::npos);
  auto named = run_arun(args({"approve", id, "--step", "left"}));
  CHECK(named.exit_code == 2);
  CHECK(named.err.find("gate left of session " + id + " was denied; a denial is final") != std::string::npos);
  auto resumed = p.run({"resume", id});
  REQUIRE(resumed.exit_code == 0);
  CHECK(status_of(result_of(resumed), "left") == "failed");
  CHECK(status_of(result_of(resumed), "right") == "completed");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: a while loop resumed at its second iteration's gate keeps what the first iteration set") {
  session_project p;
  // The condition reads `first`, which only the body sets: replaying iteration 0 from the
  // journal must bring it back, or the loop would end after one iteration.
  const auto file = p.write("loop.yaml", "name: loop\ncontext:\n  log: " + p.log.string() +
                                             "\nsteps:\n  - id: w\n    while_condition: \"{{_loop_index}} == 0 or first == 'a'\"\n"
                                             "    break_when: \"{{_loop_iteration}} >= 2\"\n    steps:\n"
                                             "      - id: pick\n        command: \"echo {{step.id}} >> {{log}}; echo a\"\n"
                                             "        output: first\n"
                                             "      - id: more\n        requires_approval: true\n        approval_prompt: More?\n");
  REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
  const auto id = p.only_id();
  REQUIRE(run_arun({"approve", id, "--session-dir", p.sessions.string()}).exit_code == 0);
  auto second = p.run({"resume", id, "--no-input"});
  REQUIRE(second.exit_code == 5);
  CHECK(result_of(second).at("waiting_approval").at("step") == "w[1]/more");
  REQUIRE(run_arun({"approve", id, "--session-dir", p.sessions.string()}).exit_code == 0);
  auto third = p.run({"resume", id, "--no-input"});
  INFO(third.err);
  REQUIRE(third.exit_code == 0);
  const auto result = result_of(third);
  const auto& loop = result.at("step_results").at(0).as_object();
  CHECK(loop.at("iterations").at("completed") == 2);
  CHECK(loop.at("output").as_array().size() == 2);
  const auto logged = counts(lines_of(p.log));
  CHECK(logged.at("w[0]/pick") == 1);
  CHECK(logged.at("w[1]/pick") == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: a member that skipped the rest still skips it when the resume replays it") {
  session_project p;
  const auto file = p.write("skip.yaml", "name: skip\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" +
                                             "  - id: gate\n    requires_approval: true\n    approval_prompt: Go?\n"
                                             "    parallel_group: g\n" +
                                             "  - id: broken\n    command: exit 3\n    on_error: skip_remaining\n"
                                             "    parallel_group: g\n" +
                                             leaf("after", "a"));
  REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
  const auto id = p.only_id();
  REQUIRE(run_arun({"approve", id, "--session-dir", p.sessions.string()}).exit_code == 0);
  auto resumed = p.run({"resume", id});
  REQUIRE(resumed.exit_code == 0);
  CHECK(status_of(result_of(resumed), "broken") == "failed");
  CHECK(status_of(result_of(resumed), "after") == "skipped");
  CHECK_FALSE(fs::exists(p.log));  // `after` never ran
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: --all denies every waiting gate of a parallel group") {
  session_project p;
  const std::string gate = "    requires_approval: true\n    approval_prompt: Go?\n    parallel_group: g\n"
                           "    on_approval_denied: continue\n";
  const auto file = p.write("group.yaml", "name: group\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" +
                                              leaf("left", "l", gate) + leaf("right", "r", gate) +
                                              leaf("mid", "m", "    parallel_group: g\n") + leaf("after", "a"));
  REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
  const auto id = p.only_id();
  auto denied = run_arun({"deny", id, "--session-dir", p.sessions.string(), "--all", "--reason", "frozen"});
  REQUIRE(denied.exit_code == 0);
  CHECK(denied.err.find("denied left, right") != std::string::npos);
  auto resumed = p.run({"resume", id});
  REQUIRE(resumed.exit_code == 0);
  const auto result = result_of(resumed);
  CHECK(status_of(result, "left") == "failed");
  CHECK(status_of(result, "right") == "failed");
  CHECK(status_of(result, "after") == "completed");
  const auto logged = counts(lines_of(p.log));
  CHECK(logged.count("left") == 0);
  CHECK(logged.at("mid") == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: a denial applies on_approval_denied and is final") {
  session_project p;
  const std::string gate = "  - id: gate\n    requires_approval: true\n    approval_prompt: Go?\n";
  SECTION("fail") {
    const auto file = p.write("deny.yaml", "name: deny\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" + gate + leaf("after", "1"));
    REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
    const auto id = p.only_id();
    REQUIRE(run_arun({"deny", id, "--session-dir", p.sessions.string(), "--reason", "not today"}).exit_code == 0);
    auto r = p.run({"resume", id});
    CHECK(r.exit_code == 1);
    CHECK(status_of(result_of(r), "gate") == "failed");
    CHECK(result_of(r).at("step_results").at(0).at("error").as_string().find("approval denied: not today") != std::string::npos);
    CHECK(result_of(r).at("denied") == boost::json::parse(R"(["gate"])"));
    // Final: resuming again fails the same way, and the denial cannot be turned round; so the
    // text result suggests no resume that would fail there again.
    const auto again = run_arun({"resume", id, "--session-dir", p.sessions.string(), "-q"}, p.root.string());
    CHECK(again.exit_code == 1);
    CHECK(again.out.find("resume with") == std::string::npos);
    CHECK(again.out.find("denied: gate (a denial is final") != std::string::npos);
    CHECK(run_arun({"approve", id, "--session-dir", p.sessions.string()}).exit_code == 2);
    CHECK_FALSE(fs::exists(p.log));
  }
  SECTION("continue") {
    const auto file = p.write("deny.yaml", "name: deny\ncontext:\n  log: " + p.log.string() + "\nsteps:\n" + gate +
                                               "    on_approval_denied: continue\n" + leaf("after", "1"));
    REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
    const auto id = p.only_id();
    REQUIRE(run_arun({"deny", id, "--session-dir", p.sessions.string()}).exit_code == 0);
    auto r = p.run({"resume", id});
    CHECK(r.exit_code == 0);
    CHECK(counts(lines_of(p.log)).at("after") == 1);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: --yes approves and a terminal answer is asked for") {
  session_project p;
  const auto file = p.write("yes.yaml", "name: yes\nsteps:\n  - id: gate\n    requires_approval: true\n"
                                            "    approval_prompt: Go?\n  - id: after\n    command: echo done\n    output: done\n");
  auto yes = p.run({file, "--yes"});
  REQUIRE(yes.exit_code == 0);
  CHECK(result_of(yes).at("context").at("done") == "done");
  // A pseudo-terminal (script(1)) makes stdin and stderr terminals: arun asks.
  for (const auto& [answer, code] : std::vector<std::pair<std::string, int>>{{"y", 0}, {"n", 1}}) {
    INFO(answer);
    const auto out = p.root / ("tty-" + answer + ".txt");
    const std::string command = "printf '" + answer + "\\n' | script -qfec '" + std::string(ARUN_BINARY) + " " + file +
                                " --session-dir " + p.sessions.string() + " -q' /dev/null > " + out.string() + " 2>&1";
    const int status = std::system(command.c_str());
    CHECK(WEXITSTATUS(status) == code);
    CHECK(read_text(out).find("approve? [y/N]") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: stage gates run before the stage or after it when the prompt needs its outputs") {
  session_project p;
  const auto file = p.write("stages.yaml", "name: stages\ncontext:\n  log: " + p.log.string() +
                                               "\nstages:\n  - name: plan\n    approval:\n      required: true\n"
                                               "      prompt: \"Proceed with {{p_out}}?\"\n    steps:\n" +
                                               indented(leaf("p", "7")) +
                                               "  - name: build\n    approval:\n      required: true\n      prompt: Build?\n"
                                               "      timeout: 0.3\n      default: approve\n    steps:\n" +
                                               indented(leaf("b", "8")));
  auto first = p.run({file, "--no-input"});
  REQUIRE(first.exit_code == 5);
  // The plan stage ran: its gate needs {{p_out}}, so it comes after the stage.
  CHECK(result_of(first).at("waiting_approval").at("step") == "stage:plan");
  CHECK(result_of(first).at("waiting_approval").at("prompt") == "Proceed with 7?");
  CHECK(counts(lines_of(p.log)).at("p") == 1);
  const auto id = p.only_id();
  REQUIRE(run_arun({"approve", id, "--session-dir", p.sessions.string()}).exit_code == 0);
  // The build stage's gate comes first: nothing of the stage runs until it is decided.
  auto second = p.run({"resume", id, "--no-input"});
  REQUIRE(second.exit_code == 5);
  CHECK(result_of(second).at("waiting_approval").at("step") == "stage:build");
  CHECK(counts(lines_of(p.log)).count("b") == 0);
  // Its timeout passed while nobody answered: its default (approve) applies at the resume.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto third = p.run({"resume", id, "--no-input"});
  INFO(third.err);
  REQUIRE(third.exit_code == 0);
  const auto logged = counts(lines_of(p.log));
  CHECK(logged.at("p") == 1);
  CHECK(logged.at("b") == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("sessions: resume keeps the agent CLI the session started with") {
  session_project p;
  const auto flag = (p.root / "go").string();
  const auto file = p.write("agents.yaml", "name: agents\nsteps:\n  - id: wait\n    command: \"test -f " + flag +
                                               "\"\n  - id: ask\n    prompt: |\n      Hello.\n      FAKE: reply hi\n"
                                               "    output: answer\n");
  REQUIRE(p.run({file, "--agent-cli", "fake"}).exit_code == 1);
  std::ofstream(flag) << "";
  const auto state_dir = p.root / "fake-state";
  auto r = run_arun({"resume", p.only_id(), "--session-dir", p.sessions.string(), "--output-format", "json", "-q"},
                    p.root.string(), std::chrono::seconds(90), {"FAKE_AGENT_STATE=" + state_dir.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r).at("context").at("answer") == "hi");
  CHECK(fs::exists(state_dir / "calls.jsonl"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: SIGINT while the terminal question waits cancels the run") {
  session_project p;
  const auto file = p.write("ask.yaml", "name: ask\nsteps:\n  - id: gate\n    requires_approval: true\n"
                                            "    approval_prompt: Go?\n");
  // arun on a pseudo-terminal (Python's pty): wait for the question, then SIGINT it.
  const auto script = p.write("ask_tty.py", R"(import os, pty, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen, deadline = b"", time.time() + 30
while b"approve?" not in seen and time.time() < deadline:
    try:
        seen += os.read(fd, 4096)
    except OSError:
        break
os.kill(pid, signal.SIGINT)
while True:
    try:
        if not os.read(fd, 4096):
            break
    except OSError:
        break
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if b"approve?" in seen else 99)
)");
  const std::string command = "python3 " + script + " " + std::string(ARUN_BINARY) + " " + file + " --session-dir " +
                              p.sessions.string() + " -q > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  CHECK(WEXITSTATUS(status) == 130);
  const auto state = p.state(p.only_id());
  CHECK(state.at("status") == "cancelled");
  // Nothing was recorded as waiting: the gate is asked again on resume.
  const auto* approvals = state.if_contains("approvals");
  CHECK((approvals == nullptr || !approvals->as_object().contains("gate")));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("approvals: approval_timeout 0 and a stage's timeout 0 wait forever, never taking the default") {
  session_project p;
  // Suspends, and a resume without a decision suspends again: before, the first resume
  // applied the default (approve) at once.
  const auto waits_forever = [&](const std::string& file) {
    REQUIRE(p.run({file, "--no-input"}).exit_code == 5);
    const auto id = p.only_id();
    CHECK(p.run({"resume", id, "--no-input"}).exit_code == 5);
    CHECK(p.state(id).at("status") == "waiting_approval");
    CHECK(arun::test::leftover_processes().empty());
  };
  SECTION("a step gate") {
    waits_forever(p.write("gate0.yaml", "name: gate0\nsteps:\n  - id: ship\n    requires_approval: true\n"
                                        "    approval_prompt: Ship?\n    approval_timeout: 0\n"
                                        "    approval_default: approve\n    command: echo shipped\n"));
  }
  SECTION("a stage gate") {
    waits_forever(p.write("stage0.yaml", "name: stage0\nstages:\n  - name: release\n    approval:\n"
                                         "      required: true\n      prompt: Release?\n      timeout: 0\n"
                                         "      default: approve\n    steps:\n      - id: go\n"
                                         "        command: echo go\n"));
  }
}

TEST_CASE("sessions: session and audit files hold step output, so they are the owner's only (0600 in 0700)") {
  session_project p;
  const auto audit = p.root / "audit" / "nested";
  const auto file = p.write("secret.yaml", "name: secret\nsteps:\n  - id: big\n    command: \"head -c 200000 /dev/zero | tr "
                                           "'\\\\0' s\"\n  - id: small\n    command: echo token\n");
  auto r = p.run({file, "--audit-dir", audit.string(), "--events", (p.root / "events.jsonl").string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto mode = [](const fs::path& f) { return fs::status(f).permissions() & fs::perms::all; };
  const auto session = p.sessions / p.only_id();
  for (const auto& dir : {p.sessions, session, session / "sources", session / "outputs", audit, audit.parent_path()}) {
    INFO(dir);
    CHECK(mode(dir) == fs::perms::owner_all);
  }
  std::size_t files = 0;
  for (const auto& dir : {session, audit})
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      INFO(e.path());
      CHECK(mode(e.path()) == (fs::perms::owner_read | fs::perms::owner_write));
      ++files;
    }
  CHECK(files >= 8);  // lock, journal, state, origin, recipe, sources (2), events, outputs, audit file
  CHECK(mode(p.root / "events.jsonl") == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(arun::test::leftover_processes().empty());
}

namespace {

// `sessions show ID` (text, or its JSON `live` object) polled until it holds `wanted`, at most
// 60 s; the last answer.
std::string show_until(const session_project& p, const std::string& id, const std::string& wanted, bool as_json) {
  std::vector<std::string> args = {"sessions", "show", id, "--session-dir", p.sessions.string()};
  if (as_json) args.insert(args.end(), {"--output-format", "json"});
  std::string last;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    last = run_arun(args, p.root.string()).out;
    if (last.find(wanted) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

}  // namespace

TEST_CASE("sessions: show on a live run counts what runs, ended and failed, and after a resume what was kept") {
  session_project p;
  const auto release = p.root / "release";
  const auto recipe = p.write("live.yaml", "name: live\nsteps:\n"
                                           "  - id: fan\n    foreach: '[0, 1, 2, 3]'\n    as: n\n    max_concurrent: 3\n"
                                           "    on_error: continue\n    command: |\n"
                                           "      [ {{n}} = 0 ] && exit 0; [ {{n}} = 1 ] && exit 1\n"
                                           "      while [ ! -e " + release.string() + " ]; do sleep 0.05; done\n");
  std::string id;
  {
    arun::test::background_arun run({recipe, "--session-dir", p.sessions.string(), "-q"}, p.root);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until && p.ids().empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    id = p.only_id();
    // Items 0 and 1 ended (1 failed); 2 and 3 wait for the release file.
    const auto shown = show_until(p, id, "fan 2/4 · 2 running", false);
    INFO(shown);
    CHECK(shown.find("(held by a running arun)") != std::string::npos);
    CHECK(shown.find("progress 2 running, 2 ended in this run (1 failed)\n") != std::string::npos);
    CHECK(shown.find("now      [1/1] fan 2/4 · 2 running · 1 failed · ") != std::string::npos);
    const auto as_json = json::parse(show_until(p, id, "\"running\":2", true)).as_object();
    INFO(json::serialize(as_json));
    REQUIRE(as_json.contains("live"));
    const auto& live = as_json.at("live").as_object();
    CHECK(live.at("running").as_int64() == 2);
    CHECK(live.at("ended").as_int64() == 2);
    CHECK(live.at("failed").as_int64() == 1);
    CHECK(live.at("kept").as_int64() == 0);
    CHECK(live.at("loops").as_array().at(0).as_object().at("items").as_int64() == 4);
    // The listing counts the live run the same way (its state.json says "0 instances").
    const auto listed = run_arun({"sessions", "list", "--session-dir", p.sessions.string()}, p.root.string()).out;
    CHECK(listed.find("2 running, 2 ended in this run (1 failed)") != std::string::npos);
    const auto listed_json = json::parse(
        run_arun({"sessions", "list", "--session-dir", p.sessions.string(), "--output-format", "json"}, p.root.string()).out);
    CHECK(listed_json.as_array().at(0).at("progress") == "2 running, 2 ended in this run (1 failed)");
    ::kill(run.pid, SIGKILL);  // its children wait on: the release ends them below
    CHECK(run.wait_exit(std::chrono::seconds(10)) == 128 + SIGKILL + 1000);
  }
  {
    // The resume takes 0 and 1 from the journal: this run ran none of them.
    fs::create_directories(p.root / "resumed");
    arun::test::background_arun run({"resume", id, "--session-dir", p.sessions.string(), "-q"}, p.root / "resumed");
    const auto shown = show_until(p, id, "2 kept from earlier runs", false);
    INFO(shown);
    CHECK(shown.find("progress 2 running, 0 ended in this run (1 failed), 2 kept from earlier runs\n") != std::string::npos);
    CHECK(shown.find("now      [1/1] fan 2/4 · 2 running · 1 failed · ") != std::string::npos);
    p.write("release", "");
    CHECK(run.wait_exit(std::chrono::seconds(60)) == 0);  // on_error: continue
  }
  const auto after = run_arun({"sessions", "show", id, "--session-dir", p.sessions.string()}, p.root.string()).out;
  CHECK(after.find("now ") == std::string::npos);  // a finished run has no live line
  CHECK(after.find("progress 1/1 steps") != std::string::npos);
  CHECK(arun::test::leftover_processes(std::chrono::milliseconds(5000)).empty());
}
