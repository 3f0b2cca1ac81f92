// The built `arun` binary on recipe files: exit codes, stdout, stderr.
#include <catch2/catch.hpp>

#include "process/supervisor.hpp"
#include "process_checks.hpp"
#include "arun_cli.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <signal.h>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using arun::test::arun_run;
using arun::test::run_arun;

// A recipe file in a fresh temp directory, removed with the object.
struct temp_recipe {
  fs::path dir;
  fs::path file;
  explicit temp_recipe(const std::string& text) {
    dir = fs::temp_directory_path() / ("arun-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(dir);
    file = dir / "recipe.yaml";
    std::ofstream(file) << text;
  }
  ~temp_recipe() { fs::remove_all(dir); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

}  // namespace

TEST_CASE("the hello tutorial runs and prints one line per step") {
  const auto r = run_arun({"recipes/tutorials/01-hello.yaml"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("hello: completed in"));
  CHECK_THAT(r.out, Catch::Contains("  completed greet (") && Catch::Contains("  completed count ("));
  CHECK_THAT(r.err, Catch::Contains("greet | Hello from arun!"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("`arun run RECIPE` is the same as `arun RECIPE`, and json output is one object") {
  const auto r = run_arun({"run", "recipes/tutorials/01-hello.yaml", "--output-format", "json", "--quiet"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto v = boost::json::parse(r.out).as_object();
  CHECK(v.at("recipe_name") == "hello");
  CHECK(v.at("success") == true);
  CHECK(v.at("status") == "completed");
  CHECK(v.at("output") == 3);
  CHECK(v.at("context").at("line_count") == 3);
  const auto& steps = v.at("step_results").as_array();
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].at("step_id") == "greet");
  CHECK(steps[0].at("output") == "Hello from arun!");
  CHECK(steps[0].at("exit_code") == 0);
  CHECK(steps[0].at("signal").is_null());
  CHECK(steps[0].at("error").is_null());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a failing step exits 1, reports the error and leaves later steps not_run") {
  temp_recipe rec("name: fails\nsteps:\n  - id: ok\n    command: echo fine\n"
                  "  - id: bad\n    command: echo oops >&2; exit 7\n  - id: later\n    command: echo never\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json"});
  CHECK(r.exit_code == 1);
  const auto v = boost::json::parse(r.out).as_object();
  CHECK(v.at("status") == "failed");
  const auto& steps = v.at("step_results").as_array();
  CHECK(steps[1].at("status") == "failed");
  CHECK(steps[1].at("exit_code") == 7);
  CHECK(steps[1].at("error") == "step 'bad': exit code 7\noops\n");
  CHECK(steps[2].at("status") == "not_run");
  CHECK_THAT(r.err, Catch::Contains("bad failed"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("working directories come from -C") {
  temp_recipe rec("name: wd\nsteps:\n  - id: here\n    command: pwd\n");
  fs::create_directories(rec.dir / "sub");
  const auto r = run_arun({rec.file.string(), "-C", (rec.dir / "sub").string(), "--output-format", "json"});
  CHECK(r.exit_code == 0);
  CHECK(boost::json::parse(r.out).at("output") == boost::json::value((rec.dir / "sub").string()));
  CHECK(run_arun({rec.file.string(), "-C", "/nonexistent/dir"}).exit_code == 2);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("session.working_dir and session.project name the working directory, without -C or with -C .") {
  temp_recipe rec("name: wd\nsteps:\n  - id: here\n    command: echo \"{{session.project}}|{{session.working_dir}}\"\n");
  fs::create_directories(rec.dir / "proj");
  const auto want = "proj|" + (rec.dir / "proj").string();
  for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"-C", "."}}) {
    std::vector<std::string> args = {rec.file.string(), "--output-format", "json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_arun(args, (rec.dir / "proj").string());
    CHECK(r.exit_code == 0);
    CHECK(boost::json::parse(r.out).at("output") == boost::json::value(want));  // no "proj/", no empty project
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("an invalid recipe exits 2 with file:line:column on stderr and nothing on stdout") {
  temp_recipe rec("name: bad\nsteps:\n  - id: a\n    comand: echo hi\n");
  const auto r = run_arun({rec.file.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(rec.file.string() + ":4:5: error: unknown key 'comand' in step 'a'\n"
                                    "  |\n"
                                    "4 |     comand: echo hi\n"
                                    "  |     ^^^^^^\n"
                                    "  = help: did you mean 'command'?\n"));
  CHECK_THAT(r.err, Catch::Contains(rec.file.string() + ":3:5: error: step 'a' has no body"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a missing recipe exits 3 and no recipe exits 4") {
  const auto missing = run_arun({"no/such/recipe.yaml"});
  CHECK(missing.exit_code == 3);
  CHECK(missing.out.empty());
  CHECK_THAT(missing.err, Catch::Contains("recipe not found: no/such/recipe.yaml"));
  const auto none = run_arun({});
  CHECK(none.exit_code == 4);
  CHECK(none.out.empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a mistyped subcommand or option gets a suggestion, never a recipe lookup") {
  auto r = run_arun({"valdate", "x.yaml"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "arun: unknown command 'valdate' (did you mean 'validate'? To run a recipe named valdate: arun run "
                 "valdate)\n");
  r = run_arun({"x.yaml", "--max-concurent", "3"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "arun: unknown option '--max-concurent' (did you mean '--max-concurrent'?)\n");
  r = run_arun({"validate", "x.yaml", "--strikt"});
  CHECK(r.err == "arun: unknown option '--strikt' (did you mean '--strict'?)\n");
  r = run_arun({"sessions", "list", "--sesion-dir", "/tmp"});
  CHECK(r.err == "arun: unknown option '--sesion-dir' (did you mean '--session-dir'?)\n");
  CHECK(run_arun({"--zzz"}).err == "arun: unknown option '--zzz' (arun --help lists them)\n");
  // A recipe whose name is close to a subcommand still runs by name.
  temp_recipe lint("name: lint\nsteps:\n  - id: a\n    command: echo linted\n");
  fs::create_directories(lint.dir / "recipes");
  fs::copy_file(lint.file, lint.dir / "recipes" / "lst.yaml");
  r = run_arun({"lst", "-q"}, lint.dir.string());
  CHECK(r.exit_code == 0);
  r = run_arun({"lst", "-R" + (lint.dir / "recipes").string(), "-q"});  // -R glued to its value
  CHECK(r.exit_code == 0);
  // A tag no step carries is most likely a typo: a warning with the tags there are.
  temp_recipe tagged("name: t\nsteps:\n  - id: a\n    command: echo a\n    when_tags: [fast]\n"
                     "  - id: b\n    command: echo b\n    when_tags: [slow]\n");
  r = run_arun({tagged.file.string(), "--include-tags", "fsat", "-q"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("arun: warning: no step has the tag 'fsat': did you mean 'fast'? (tags in this "
                                    "recipe: fast, slow)"));
  CHECK(run_arun({tagged.file.string(), "--exclude-tags", "slow", "-q"}).err.find("warning") == std::string::npos);
  // -j is --max-concurrent.
  r = run_arun({lint.file.string(), "-j", "2", "-q"});
  CHECK(r.exit_code == 0);
  CHECK(run_arun({lint.file.string(), "-j", "0"}).exit_code == 2);
  // Help is grouped and free of type noise and of documents a user does not have.
  const auto help = run_arun({"--help"}).out;
  for (const char* group : {"Recipe:", "Running:", "Output:", "Agents and rate limits:"})
    CHECK_THAT(help, Catch::Contains(group));
  CHECK(help.find("FLOAT") == std::string::npos);
  CHECK(help.find("SPEC") == std::string::npos);
  CHECK(help.find("Agents and rate limits:") > help.find("Running:"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("keep-going (-k) goes past failing steps, sub-recipes included, unless a step says otherwise") {
  temp_recipe rec("name: k\nsteps:\n  - id: a\n    command: exit 3\n  - id: b\n    command: echo b\n"
                  "  - id: call\n    recipe: kc.yaml\n  - id: c\n    command: exit 4\n    on_error: fail\n"
                  "  - id: d\n    command: echo d\n");
  std::ofstream(rec.dir / "kc.yaml") << "name: kc\nsteps:\n  - id: x\n    command: exit 5\n  - id: y\n    command: echo y\n";
  auto r = run_arun({"run", rec.file.string(), "-k", "--output-format", "json", "-q"}, rec.dir.string());
  CHECK(r.exit_code == 1);
  auto result = arun::test::result_json(r);
  const auto& steps = result.at("step_results").as_array();
  CHECK(steps.at(0).at("status") == "failed");
  CHECK(steps.at(1).at("status") == "completed");
  CHECK(steps.at(2).at("status") == "failed");  // its x failed; y ran all the same
  CHECK(steps.at(2).at("children").at(1).at("status") == "completed");
  CHECK(steps.at(3).at("status") == "failed");  // `c` says on_error: fail: the run stops
  CHECK(steps.at(4).at("status") == "not_run");
  // Without -k the first failure stops the run.
  r = run_arun({"run", rec.file.string(), "--output-format", "json", "-q"}, rec.dir.string());
  CHECK(arun::test::result_json(r).at("step_results").at(1).at("status") == "not_run");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("keep-going (-k) in a dag as make -k: the failure's dependents are not run while the rest runs and exits 1 and a resume runs them") {
  // The issue's build: fetch -> compile (fails until fixed) -> package; lint on its own.
  temp_recipe rec("name: build\nexecution: dag\nsteps:\n"
                  "  - id: fetch\n    command: echo src\n    output: src\n"
                  "  - id: compile\n    command: test -f fixed && echo 'bin of {{src}}'\n    output: binary\n"
                  "  - id: package\n    command: echo 'pkg of {{binary}}'\n"
                  "  - id: lint\n    command: echo clean\n");
  const auto sessions = rec.dir / "sessions";
  auto r = run_arun({rec.file.string(), "-k", "--session-dir", sessions.string(), "--output-format", "json", "-q"},
                    rec.dir.string());
  CHECK(r.exit_code == 1);
  auto result = arun::test::result_json(r);
  CHECK(result.at("status") == "failed");
  CHECK(result.at("error") == "step 'compile': exit code 1");
  const auto& steps = result.at("step_results").as_array();
  CHECK(steps.at(0).at("status") == "completed");
  CHECK(steps.at(1).at("status") == "failed");
  CHECK(steps.at(2).at("status") == "not_run");
  CHECK(steps.at(2).at("error") == "step 'package': not run: it reads 'binary', and 'compile' failed");
  CHECK(steps.at(3).at("status") == "completed");
  // The text result says the same.
  auto text = run_arun({rec.file.string(), "-k", "--session-dir", (rec.dir / "other").string(), "--progress", "off"},
                       rec.dir.string());
  CHECK(text.exit_code == 1);
  CHECK_THAT(text.out, Catch::Contains("not run: it reads 'binary', and 'compile' failed"));
  // Fixed, a plain resume runs the failure and what it held back, and nothing else again.
  std::ofstream(rec.dir / "fixed") << "";
  std::string id;
  for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
  r = run_arun({"resume", id, "--session-dir", sessions.string(), "--output-format", "json", "-q"}, rec.dir.string());
  CHECK(r.exit_code == 0);
  result = arun::test::result_json(r);
  CHECK(result.at("status") == "completed");
  CHECK(result.at("step_results").at(2).at("output") == "pkg of bin of src");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("keep-going (-k) across a sub-recipe call: neither side reads what the other's failed step did not write") {
  temp_recipe rec("name: k\ncontext:\n  aout: STALE\n  art: STALE\nsteps:\n"
                  "  - id: a\n    command: exit 3\n    output: aout\n"
                  "  - id: call\n    recipe: kc.yaml\n"
                  "  - id: use\n    command: echo 'use {{art}}'\n"
                  "  - id: after\n    command: echo after\n");
  // The child reads the caller's failed output, fails a step that would give `art` back, and
  // ends itself early with skip_remaining, which must not skip the caller's `after`.
  std::ofstream(rec.dir / "kc.yaml") << "name: kc\nsteps:\n"
                                        "  - id: reads\n    command: echo 'child {{aout}}'\n"
                                        "  - id: build\n    command: exit 4\n    output: art\n"
                                        "  - id: stop\n    command: exit 6\n    on_error: skip_remaining\n"
                                        "  - id: never\n    command: echo never\n";
  auto r = run_arun({"run", rec.file.string(), "-k", "--output-format", "json", "-q"}, rec.dir.string());
  CHECK(r.exit_code == 1);
  const auto result = arun::test::result_json(r);
  const auto& steps = result.at("step_results").as_array();
  const auto& children = steps.at(1).at("children").as_array();
  CHECK(children.at(0).at("status") == "not_run");
  CHECK(children.at(0).at("error") == "step 'call/reads': not run: it reads 'aout', and 'a' failed");
  CHECK(steps.at(1).at("status") == "failed");
  CHECK(steps.at(2).at("status") == "not_run");
  CHECK(steps.at(2).at("error") == "step 'use': not run: it reads 'art', and 'call' failed");
  CHECK(steps.at(3).at("status") == "completed");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("usage errors exit 2, --help and --version exit 0") {
  CHECK(run_arun({"--no-such-option"}).exit_code == 2);
  CHECK(run_arun({"x.yaml", "--output-format", "xml"}).exit_code == 2);
  const auto help = run_arun({"--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("run"));
  const auto version = run_arun({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("arun "));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a step timeout fails the run and kills the step's processes") {
  temp_recipe rec("name: slow\nsteps:\n  - id: slow\n    timeout: 0.5\n    command: sleep 60 & sleep 60\n");
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_arun({rec.file.string(), "--output-format", "json", "--kill-grace", "1"});
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  CHECK(r.exit_code == 1);
  const auto step = boost::json::parse(r.out).at("step_results").at(0);
  CHECK(step.at("timed_out") == true);
  CHECK(step.at("signal") == 15);
  CHECK(arun::test::leftover_processes().empty());
}

namespace {

// Runs arun on `recipe`; when a step prints "arun pid N", sends `sig` to arun.
arun_run run_and_signal(const temp_recipe& rec, int sig) {
  arun::io::process_spec spec;
  spec.launch.argv = {ARUN_BINARY, rec.file.string(), "--output-format", "json", "--kill-grace", "1"};
  spec.launch.env = arun::io::current_environment();
  spec.timeout = 60s;
  bool sent = false;  // the result on stdout quotes the line again: signal once
  spec.on_line = [sig, &sent](arun::io::stream_id, std::string_view line, bool) {
    const auto at = line.find("arun pid ");
    if (at == std::string_view::npos || sent) return;
    sent = true;
    ::kill(std::stoi(std::string(line.substr(at + 9))), sig);
  };
  auto r = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  REQUIRE_FALSE(r.timed_out);
  INFO("arun's stderr: " << r.err.text << " signal: " << r.signal.value_or(0));
  CHECK_FALSE(r.signal);
  return {r.exit_code.value_or(-1), r.out.text, r.err.text};
}

}  // namespace

TEST_CASE("SIGTERM to arun stops the running step, reports it cancelled and exits 143") {
  temp_recipe rec("name: long\nsteps:\n  - id: slow\n    command: echo \"arun pid $PPID\"; sleep 30 & sleep 30\n"
                  "  - id: after\n    command: echo never\n");
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_and_signal(rec, SIGTERM);
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  CHECK(r.exit_code == 143);
  const auto v = boost::json::parse(r.out);
  CHECK(v.at("status") == "cancelled");
  CHECK(v.at("step_results").at(0).at("status") == "cancelled");
  CHECK(v.at("step_results").at(1).at("status") == "not_run");
  CHECK_THAT(r.err, Catch::Contains("SIGTERM received"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("SIGINT to arun exits 130 after stopping the step") {
  temp_recipe rec("name: long\nsteps:\n  - id: slow\n    command: echo \"arun pid $PPID\"; sleep 30\n");
  const auto r = run_and_signal(rec, SIGINT);
  CHECK(r.exit_code == 130);
  CHECK(boost::json::parse(r.out).at("status") == "cancelled");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("arun works with stdin and stderr closed and survives a closed stdout pipe") {
  temp_recipe rec("name: fds\nsteps:\n  - id: limits\n    command: echo \"$(ulimit -Sn) $(ulimit -Hn)\"\n"
                  "  - id: pause\n    command: sleep 0.3\n");
  arun::io::process_spec closed;
  closed.launch.argv = {"/bin/bash", "-c", "exec 0<&- 2>&-; exec \"$0\" \"$1\" --output-format json", ARUN_BINARY,
                        rec.file.string()};
  closed.launch.env = arun::io::current_environment();
  auto r = arun::test::run_sync(arun::io::run_process(std::move(closed)));
  CHECK(r.exit_code == 0);
  const auto v = boost::json::parse(r.out.text);
  CHECK(v.at("status") == "completed");
  // RLIMIT_NOFILE was raised to the hard limit, which the steps inherit.
  const std::string limits(v.at("step_results").at(0).at("output").as_string());
  CHECK(limits.substr(0, limits.find(' ')) == limits.substr(limits.find(' ') + 1));

  // SIGPIPE is ignored: writing the result into a closed pipe is not fatal (141).
  arun::io::process_spec piped;
  piped.launch.argv = {"/bin/bash", "-c", "\"$0\" \"$1\" | true; echo ${PIPESTATUS[0]}", ARUN_BINARY,
                       rec.file.string()};
  piped.launch.env = arun::io::current_environment();
  r = arun::test::run_sync(arun::io::run_process(std::move(piped)));
  CHECK(r.out.text == "0\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a second SIGINT kills the running steps at once") {
  temp_recipe rec("name: stubborn\nsteps:\n  - id: slow\n    command: trap '' TERM; echo \"arun pid $PPID\"; sleep 60\n");
  arun::io::process_spec spec;
  spec.launch.argv = {ARUN_BINARY, rec.file.string(), "--kill-grace", "60"};
  spec.launch.env = arun::io::current_environment();
  spec.timeout = 60s;
  int sent = 0;
  spec.on_line = [&sent](arun::io::stream_id, std::string_view line, bool) {
    const auto at = line.find("arun pid ");
    if (at == std::string_view::npos || sent > 0) return;
    const int pid = std::stoi(std::string(line.substr(at + 9)));
    ::kill(pid, SIGINT);
    ::usleep(200 * 1000);
    ::kill(pid, SIGINT);
    sent = 2;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto r = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  CHECK(std::chrono::steady_clock::now() - start < 20s);  // not the 60 s grace
  CHECK(r.exit_code == 130);
  CHECK_THAT(r.err.text, Catch::Contains("second SIGINT: killing every running step"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("validate prints every diagnostic and exits 0 for warnings only, 2 for errors") {
  temp_recipe warn("name: w\nx-owner: team\nsteps:\n  - id: a\n    command: echo {{who}}\ncontext: {who: me}\n");
  auto r = run_arun({"validate", warn.file.string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains(":2:1: warning: unknown key 'x-owner' in the recipe\n") && Catch::EndsWith("1 warning\n"));
  CHECK_THAT(r.out, Catch::Contains("valid (with warnings)"));
  CHECK(run_arun({"validate", warn.file.string(), "--strict"}).exit_code == 2);

  temp_recipe bad("name: b\nsteps:\n  - id: a\n    command: echo {{ghost}}\n    depends_on: [nope]\n");
  r = run_arun({"validate", bad.file.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(":5:18: error: step 'a' depends on 'nope', which no step has as id"));
  CHECK_THAT(r.err, Catch::Contains(":4:19: error: undefined variable 'ghost' in {{ghost}} of step 'a'"));
  // Sorted by position (line 4 before line 5), then counted.
  CHECK(r.err.find(":4:19: error") < r.err.find(":5:18: error"));
  CHECK_THAT(r.err, Catch::EndsWith("\n2 errors\n"));
  // No colour into a pipe unless asked; --color never wins over a terminal.
  CHECK(r.err.find('\x1b') == std::string::npos);
  r = run_arun({"validate", bad.file.string(), "--color", "always"});
  CHECK_THAT(r.err, Catch::Contains("\x1b[1;31merror\x1b[0m"));
  CHECK(run_arun({"validate", bad.file.string(), "--color", "sometimes"}).exit_code == 2);
  // --set declares the name, and validate accepts it.
  temp_recipe needs_set("name: s\nsteps:\n  - id: a\n    command: echo\n    output: \"{{ghost}}\"\n");
  CHECK(run_arun({"validate", bad.file.string(), "--set", "ghost=1"}).exit_code == 2);  // depends_on still wrong
  CHECK(run_arun({"validate", "no/such.yaml"}).exit_code == 3);
  CHECK(run_arun({"validate"}).exit_code == 4);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("run without a terminal stops at an approval gate with exit 5 and the gate on stdout") {
  temp_recipe rec("name: later\nsteps:\n  - id: a\n    command: echo hi\n  - id: gate\n    requires_approval: true\n"
                  "    approval_prompt: Go on?\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json"});  // stdin is /dev/null
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.out, Catch::Contains("\"status\":\"waiting_approval\""));
  CHECK_THAT(r.out, Catch::Contains("\"waiting_approval\":{\"step_id\":\"gate\",\"step\":\"gate\",\"prompt\":\"Go on?\"}"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("validate reports agents that do not resolve at the agent key") {
  // c's agent is a template (declared, so validate accepts the reference): it is resolved only
  // when the step runs, never at validate.
  temp_recipe rec("name: agents\nsteps:\n  - id: a\n    command: echo hi\n  - id: b\n    agent: ns:ghost\n    prompt: hi\n"
                  "  - id: c\n    agent: \"{{ later }}\"\n    prompt: hi\n    condition: \"false\"\n"
                  "context:\n  later: ns:elsewhere\n");
  const auto file = rec.file.string();
  auto r = run_arun({"validate", file});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(file + ":6:12: error: step 'b': agent 'ns:ghost' not found (looked for ns/ghost.md"));
  CHECK_THAT(r.err, !Catch::Contains("step 'c'"));
  // --allow-missing-agents: a warning, and the recipe is valid.
  r = run_arun({"validate", "--allow-missing-agents", file});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains(file + ":6:12: warning: step 'b': agent 'ns:ghost' not found"));
  // run checks agents before it starts anything.
  r = run_arun({file});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(":6:12: error: step 'b': agent 'ns:ghost' not found"));
  // --agent-dir makes it resolve (ns:ghost falls back to ghost.md).
  fs::create_directories(rec.dir / "agents");
  std::ofstream(rec.dir / "agents/ghost.md") << "---\ndescription: A ghost\n---\nBoo.\n";
  r = run_arun({"validate", file, "--agent-dir", (rec.dir / "agents").string(), "--agent-cli", "fake"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  // The agent CLI the run would use is looked for too: missing, it is a warning at the first
  // agent step (the recipe itself is fine), an error under --strict.
  const std::vector<std::string> missing_cli = {"validate", file, "--agent-dir", (rec.dir / "agents").string(),
                                                "--agent-command", "/nonexistent/agent {prompt_file}"};
  r = run_arun(missing_cli);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains(file + ":7:13: warning: the agent CLI '/nonexistent/agent' (") &&
                        Catch::Contains("is not installed or not on PATH, and step 'b' needs it (looked in "
                                        "/nonexistent/agent)"));
  auto strict = missing_cli;
  strict.push_back("--strict");
  CHECK(run_arun(strict).exit_code == 2);
  r = run_arun({"validate", file, "--agent-cli", "nonsense"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("nonsense"));
  // -C: the project places are below the working directory.
  fs::create_directories(rec.dir / ".claude/agents/ns");
  std::ofstream(rec.dir / ".claude/agents/ns/ghost.md") << "Boo.\n";
  CHECK(run_arun({"validate", file, "-C", rec.dir.string()}).exit_code == 0);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agents list prints each agent with its path and source and marks shadowed ones") {
  temp_recipe rec("name: unused\nsteps:\n  - id: a\n    command: echo\n");
  fs::create_directories(rec.dir / "extra/ns");
  fs::create_directories(rec.dir / ".claude/agents/ns");
  std::ofstream(rec.dir / "extra/ns/rev.md") << "---\ndescription: Reviews\n---\nbody\n";
  std::ofstream(rec.dir / ".claude/agents/ns/rev.md") << "body\n";
  std::ofstream(rec.dir / ".claude/agents/solo.md") << "body\n";
  const auto extra = (rec.dir / "extra").string();
  const auto r = run_arun({"agents", "list", "--agent-dir", extra, "-C", rec.dir.string()});
  CHECK(r.exit_code == 0);
  const auto real = fs::canonical(rec.dir).string();
  CHECK_THAT(r.out, Catch::Contains(real + "/extra/ns/rev.md  (--agent-dir " + extra + ")\n    Reviews\n"));
  CHECK_THAT(r.out, Catch::Contains(real + "/.claude/agents/ns/rev.md  (.claude/agents) [shadowed]\n"));
  CHECK_THAT(r.out, Catch::Contains("solo ") && Catch::Contains(real + "/.claude/agents/solo.md  (.claude/agents)\n"));
  CHECK(run_arun({"agents"}).exit_code == 2);  // a subcommand is required
}

TEST_CASE("set options add typed context values and the recipe output names the final output") {
  temp_recipe rec("name: sets\noutput: answer\ncontext: {answer: 1}\nsteps:\n  - id: a\n    command: echo hi\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json", "-q", "--set", "answer=42", "--set",
                           "cfg.mode=fast", "--set", "name=bob", "--set", "list=[1,2]"});
  CHECK(r.exit_code == 0);
  const auto v = boost::json::parse(r.out);
  CHECK(v.at("output") == 42);
  CHECK(v.at("context").at("cfg").at("mode") == "fast");
  CHECK(v.at("context").at("name") == "bob");
  CHECK(v.at("context").at("list") == boost::json::parse("[1,2]"));
  const auto bad = run_arun({rec.file.string(), "--set", "novalue"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--set takes KEY=VALUE, got 'novalue'"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("explain says a stage gate is asked after the stage when its prompt reads the stage's own output") {
  temp_recipe rec("name: staged\nstages:\n"
                  "  - name: build\n    approval: {required: true, prompt: \"Ship {{artifact}}?\"}\n    steps:\n"
                  "      - id: make\n        command: echo a.tar\n        output: artifact\n"
                  "  - name: deploy\n    approval: {required: true, prompt: \"Deploy {{artifact}}?\"}\n    steps:\n"
                  "      - id: go\n        command: echo go\n");
  auto r = run_arun({"explain", rec.file.string()});
  CHECK(r.exit_code == 0);
  // build's gate needs build's own output: the engine asks after the stage, and so must explain.
  CHECK_THAT(r.out, Catch::Contains("stage build\n  needs approval after the stage: Ship {{artifact}}?\n"));
  CHECK_THAT(r.out, Catch::Contains("stage deploy\n  needs approval before the stage: Deploy {{artifact}}?\n"));
}

TEST_CASE("explain prints the plan") {
  temp_recipe rec("name: views\ndescription: shows views\ncontext: {n: 1}\nsteps:\n"
                  "  - id: first\n    command: echo one\n    timeout: 30\n"
                  "  - id: maybe\n    condition: \"{{n}} > 0\"\n    command: echo two\n    output: two\n"
                  "  - id: fan\n    foreach: [1, 2]\n    parallel: 2\n    command: echo {{item}}\n    depends_on: [first]\n");
  auto r = run_arun({"explain", rec.file.string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("recipe views 1.0.0\n  shows views\n"));
  CHECK_THAT(r.out, Catch::Contains("  1. first [bash]\n       command: echo one\n       timeout: 30s\n"));
  CHECK_THAT(r.out, Catch::Contains("       only when: {{n}} > 0\n"));
  CHECK_THAT(r.out, Catch::Contains("       for each item in [1,2], 2 at a time\n"));
  CHECK_THAT(r.out, Catch::Contains("  n = 1\n"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("list shows the recipes discovery finds, earlier directories shadowing later ones") {
  temp_recipe rec("name: one\nversion: 2.0.0\ndescription: the first\nsteps:\n  - id: a\n    command: echo ok\n");
  fs::create_directories(rec.dir / "recipes");
  std::ofstream(rec.dir / "recipes" / "recipe.yaml") << "name: shadowed\nsteps:\n  - id: a\n    command: x\n";
  std::ofstream(rec.dir / "recipes" / "other.yml") << "name: other\ndescription: second\nsteps:\n  - id: a\n    command: x\n";
  const auto r = run_arun({"list", "-R", rec.dir.string(), "-C", rec.dir.string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("recipe                       2.0.0     the first\n    " + rec.file.string()));
  CHECK_THAT(r.out, Catch::Contains("other                        1.0.0     second\n"));
  CHECK_THAT(r.out, Catch::Contains("1.0.0      [shadowed]\n    " + (rec.dir / "recipes" / "recipe.yaml").string()));
  // Discovery by name runs the first one.
  const auto run = run_arun({"recipe", "-R", rec.dir.string(), "-q", "--output-format", "json"});
  CHECK(run.exit_code == 0);
  CHECK(boost::json::parse(run.out).at("recipe_name") == "one");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("templates in commands arrive byte-exact and are never executed") {
  const auto canary = fs::temp_directory_path() / ("arun-canary-" + std::to_string(::getpid()));
  temp_recipe rec("name: tpl\ncontext:\n  nasty: \"it's \\\"quoted\\\" $(touch " + canary.string() +
                  ") `touch " + canary.string() + "` \\\\ $HOME\"\n  n: 3\n  obj: {status: ok}\n"
                  "steps:\n  - id: echo\n    command: printf '%s|%s|%s' {{nasty}} \"{{ obj.status }}\" '{{n}}'\n"
                  "    output: echoed\n"
                  "  - id: arith\n    command: echo $(( {{n}} * 2 ))\n"
                  "  - id: envs\n    env: {GREETING: \"hi {{obj.status}}\"}\n    command: echo \"$GREETING $RECIPE_VAR_n $N\"\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json", "-q"});
  CHECK(r.exit_code == 0);
  const auto v = boost::json::parse(r.out);
  CHECK(v.at("step_results").at(0).at("output") ==
        boost::json::value("it's \"quoted\" $(touch " + canary.string() + ") `touch " + canary.string() + "` \\ $HOME|ok|3"));
  CHECK(v.at("step_results").at(1).at("output") == 6);
  CHECK(v.at("step_results").at(2).at("output") == "hi ok 3 3");
  CHECK_FALSE(fs::exists(canary));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("conditions skip steps, and a bad value in arithmetic fails the step before it runs") {
  temp_recipe rec("name: cond\ncontext: {mode: fast, n: abc}\nsteps:\n"
                  "  - id: fast\n    condition: \"{{mode}} == 'fast'\"\n    command: echo yes\n    output: ran\n"
                  "  - id: slow\n    condition: \"mode == 'slow'\"\n    command: echo no\n    output: never\n"
                  "  - id: uses\n    command: echo \"[{{never}}]\"\n"
                  "  - id: math\n    command: echo $(( {{n}} + 1 ))\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json"});
  CHECK(r.exit_code == 1);
  const auto steps = boost::json::parse(r.out).at("step_results").as_array();
  CHECK(steps[0].at("status") == "completed");
  CHECK(steps[1].at("status") == "skipped");
  CHECK(steps[2].at("status") == "completed");
  CHECK(steps[2].at("output") == boost::json::parse("[]"));  // declared but unset: empty, with a warning
  CHECK_THAT(r.err, Catch::Contains("warning: uses: {{never}} has no value"));
  CHECK(steps[3].at("status") == "failed");
  CHECK(steps[3].at("attempts") == 0);
  CHECK_THAT(std::string(steps[3].at("error").as_string()), Catch::StartsWith("step 'math': command: "));
  // --strict turns the unset reference into a failure.
  const auto strict = run_arun({rec.file.string(), "--output-format", "json", "--strict", "-q"});
  CHECK(strict.exit_code == 1);
  CHECK(boost::json::parse(strict.out).at("step_results").at(2).at("status") == "failed");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("values given by --set never run: name and integer positions fail the step, program settings are set only explicitly") {
  const auto dir = fs::temp_directory_path() / ("arun-inject-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto canary = (dir / "PWNED").string();
  temp_recipe rec("name: inject\ncontext: {x: '1', git_config_parameters: ''}\nsteps:\n"
                  "  - id: integer\n    command: declare -i n={{x}}; echo $n\n    on_error: continue\n"
                  "  - id: name\n    command: printf -v \"a[{{x}}]\" %s 1\n    on_error: continue\n"
                  "  - id: git\n    working_dir: " + dir.string() + "\n"
                  "    command: git init -q repo && cd repo && git status --porcelain && printenv GIT_CONFIG_PARAMETERS || echo none\n"
                  // A reference there would be a code position (git runs core.fsmonitor): the
                  // command says it takes the setting from the environment.
                  "  - id: opted_in\n"
                  "    command: GIT_CONFIG_PARAMETERS=\"$RECIPE_VAR_git_config_parameters\" printenv GIT_CONFIG_PARAMETERS\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json", "-q", "--set", "x=a[$(touch " + canary + ")]",
                           "--set", "git_config_parameters='core.fsmonitor'='touch " + canary + "'"});
  INFO(r.err);
  const auto steps = boost::json::parse(r.out).at("step_results").as_array();
  CHECK(steps[0].at("status") == "failed");
  CHECK_THAT(std::string(steps[0].at("error").as_string()), Catch::Contains("arithmetic position"));
  CHECK(steps[1].at("status") == "failed");
  CHECK_THAT(std::string(steps[1].at("error").as_string()), Catch::Contains("arithmetic position"));
  CHECK(steps[2].at("output") == "none");
  CHECK(steps[3].at("output") == boost::json::value("'core.fsmonitor'='touch " + canary + "'"));
  CHECK_FALSE(fs::exists(canary));
  fs::remove_all(dir);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a NUL escape in a command is refused before anything runs") {
  const auto canary = fs::temp_directory_path() / ("arun-nul-canary-" + std::to_string(::getpid()));
  temp_recipe rec("name: nul\nsteps:\n  - id: a\n    command: \"echo kept\\0; touch " + canary.string() + "\"\n");
  for (const auto* verb : {"validate", "run"}) {
    const auto r = run_arun({verb, rec.file.string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(":4:24: error: this string holds a NUL character"));
  }
  CHECK_FALSE(fs::exists(canary));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("every tutorial recipe runs successfully") {
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(ARUN_SOURCE_DIR) / "recipes" / "tutorials")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    // The agent tutorial rehearses with the fake agent; the approval tutorial's gate is approved.
    const auto r = run_arun({entry.path().string(), "--output-format", "json", "-q", "--agent-cli", "fake", "--yes"});
    CHECK(r.exit_code == 0);
    CHECK(boost::json::parse(r.out).at("status") == "completed");
    ++ran;
  }
  CHECK(ran >= 12);
  const auto r = run_arun({"recipes/tutorials/02-variables.yaml", "--set", "who=O'Brien & \"friends\" $(rm -rf ~)",
                           "--set", "rounds=1", "--output-format", "json", "-q"});
  const auto steps = boost::json::parse(r.out).at("step_results").as_array();
  CHECK(steps[1].at("output") == "Hello, O'Brien & \"friends\" $(rm -rf ~)! (1 of 1)");
  const auto c = run_arun({"recipes/tutorials/03-conditions.yaml", "--output-format", "json", "-q"});
  CHECK(boost::json::parse(c.out).at("step_results").as_array()[1].at("status") == "skipped");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("validate resolves sub-recipes: their outputs are declared, missing ones are errors") {
  temp_recipe rec("name: parent\nsteps:\n  - id: call\n    recipe: child\n  - id: use\n    command: echo {{result}}\n"
                  "  - id: by-path\n    recipe: ./lib/helper.yaml\n");
  std::ofstream(rec.dir / "child.yaml") << "name: child\nsteps:\n  - id: make\n    command: echo 1\n    output: result\n";
  fs::create_directories(rec.dir / "lib");
  std::ofstream(rec.dir / "lib" / "helper.yaml") << "name: helper\nsteps:\n  - id: h\n    command: echo h\n";
  auto r = run_arun({"validate", rec.file.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());

  temp_recipe missing("name: p\nsteps:\n  - id: call\n    recipe: nowhere\n  - id: escape\n    recipe: ../../etc/passwd.yaml\n");
  r = run_arun({"validate", missing.file.string()});
  CHECK(r.exit_code == 2);
  // Like the top-level error, it says where it looked: next to the caller first.
  CHECK_THAT(r.err, Catch::Contains(":4:13: error: sub-recipe 'nowhere' not found (looked for nowhere.yaml and "
                                    "nowhere.yml in " + missing.dir.string() + ", ") &&
                        Catch::Contains("/recipes") && Catch::Contains(") (step 'call')"));
  CHECK_THAT(r.err, Catch::Contains(":6:13: error: recipe '../../etc/passwd.yaml' not found"));

  // Found by name through a symlink that leads outside: refused, as the same path would be.
  temp_recipe linked("name: p\nsteps:\n  - id: call\n    recipe: evil\n");
  temp_recipe elsewhere("name: evil\nsteps:\n  - id: e\n    command: echo evil\n");
  fs::create_symlink(elsewhere.file, linked.dir / "evil.yaml");  // next to the caller
  r = run_arun({"validate", linked.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(":4:13: error: sub-recipe 'evil': recipe path '") &&
                        Catch::Contains("resolves to " + fs::canonical(elsewhere.file).string() + ", outside"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("the whole call tree is checked before the first step: a sub-recipe's references against what its callers pass") {
  // Step 1 writes a file; the grandchild reads a name nothing along its call chain declares.
  temp_recipe rec("name: parent\ncontext:\n  topic: x\nsteps:\n  - id: write\n    command: touch written\n"
                  "  - id: call\n    recipe: middle\n    context:\n      passed: \"{{topic}}\"\n");
  std::ofstream(rec.dir / "middle.yaml") << "name: middle\nsteps:\n  - id: leaf\n    recipe: leaf\n";
  std::ofstream(rec.dir / "leaf.yaml") << "name: leaf\nsteps:\n  - id: use\n    command: echo {{topic}} {{passed}} {{typo}}\n";
  auto r = run_arun({"validate", rec.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains((rec.dir / "leaf.yaml").string() + ":4:40: error: undefined variable 'typo'") &&
                        Catch::Contains("(sub-recipe called as parent step 'call' -> middle step 'leaf' -> leaf)"));
  // `topic` (the caller's context) and `passed` (the call's override) are not reported.
  CHECK(r.err.find("'topic'") == std::string::npos);
  CHECK(r.err.find("'passed'") == std::string::npos);
  r = run_arun({"run", rec.file.string()}, rec.dir.string());
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(rec.dir / "written"));  // refused before anything ran
  // Fixed, it runs.
  std::ofstream(rec.dir / "leaf.yaml") << "name: leaf\nsteps:\n  - id: use\n    command: echo {{topic}} {{passed}}\n";
  r = run_arun({"run", rec.file.string()}, rec.dir.string());
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(rec.dir / "written"));

  // A sub-recipe chosen at run time anywhere in the tree may produce names no one can see
  // now: reading them is a warning, not an error, at every level.
  temp_recipe dynamic("name: top\nsteps:\n  - id: b\n    recipe: middle\n  - id: use\n    command: echo {{picked}}\n");
  std::ofstream(dynamic.dir / "middle.yaml") << "name: middle\ncontext:\n  which: leaf\nsteps:\n"
                                                "  - id: pick\n    recipe: \"{{which}}\"\n  - id: show\n    command: echo {{picked}}\n";
  r = run_arun({"validate", dynamic.file.string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("warning: undefined variable 'picked'"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a sub-recipe reading a name its caller declares but left unset renders it empty with a warning") {
  temp_recipe rec("name: parent\ncontext:\n  deep: false\nsteps:\n  - id: investigate\n    condition: deep\n"
                  "    command: echo lots\n    output: findings\n  - id: report\n    recipe: child\n");
  std::ofstream(rec.dir / "child.yaml") << "name: child\nsteps:\n  - id: use\n    command: echo \"findings=[{{findings}}]\"\n";
  auto r = run_arun({"run", rec.file.string()}, rec.dir.string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("{{findings}} has no value") && Catch::Contains("rendered empty"));
  CHECK_THAT(r.err, Catch::Contains("findings=[]"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a recipe-level env applies to every step and hook before the step's own, and extends merges it") {
  temp_recipe rec("name: e\ncontext:\n  region: eu\nenv:\n  REGION: \"{{region}}\"\n  SHARED: recipe\n"
                  "hooks:\n  post_step: echo \"hook $REGION\" >> hook.log\n"
                  "steps:\n  - id: a\n    command: echo \"$REGION $SHARED\"\n    env:\n      SHARED: step\n"
                  "  - id: b\n    command: echo \"$SHARED\"\n");
  auto r = run_arun({"run", rec.file.string(), "--output-format", "json", "-q"}, rec.dir.string());
  REQUIRE(r.exit_code == 0);
  auto result = arun::test::result_json(r);
  CHECK(result.at("step_results").at(0).at("output") == "eu step");
  CHECK(result.at("step_results").at(1).at("output") == "recipe");
  CHECK(arun::test::read_text(rec.dir / "hook.log") == "hook eu\nhook eu\n");
  // A child that extends it keeps the parent's names and wins for its own.
  std::ofstream(rec.dir / "child.yaml") << "name: c\nextends: recipe.yaml\nenv:\n  SHARED: child\n"
                                           "steps:\n  - id: c\n    command: echo \"$REGION $SHARED\"\n";
  r = run_arun({"run", (rec.dir / "child.yaml").string(), "--output-format", "json", "-q"}, rec.dir.string());
  REQUIRE(r.exit_code == 0);
  result = arun::test::result_json(r);
  CHECK(result.at("step_results").at(0).at("output") == "eu step");
  CHECK(result.at("step_results").at(1).at("output") == "child");
  CHECK(result.at("step_results").at(2).at("output") == "eu child");
  // Its references are checked like a step's, where they are written.
  temp_recipe bad("name: e\ncontext:\n  region: eu\nenv:\n  REGION: \"{{regin}}\"\norchestrator:\n  config: {}\n"
                  "steps:\n  - id: a\n    command: echo\n");
  r = run_arun({"validate", bad.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(":5:12: error: undefined variable 'regin' in {{regin}} of the recipe's env") &&
                        Catch::Contains("help: did you mean 'region'?"));
  CHECK_THAT(r.err, Catch::Contains(":7:3: warning: 'orchestrator' paces calls inside the Python runner's own agent "
                                    "sessions and has no effect on agent CLIs"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("built-in names have values: recipe, session and step") {
  temp_recipe rec("name: builtins\nversion: 1.2.3\nsteps:\n  - id: first\n    command: echo one\n"
                  "  - id: show\n    condition: \"recipe.name == 'builtins'\"\n"
                  "    command: echo \"{{recipe.name}} {{recipe.version}} {{session.id}} {{step.id}} {{step.index}} "
                  "{{session.working_dir}}\"\n");
  const auto r = run_arun({rec.file.string(), "-C", rec.dir.string(), "--output-format", "json", "-q", "--strict"});
  CHECK(r.exit_code == 0);
  const auto v = boost::json::parse(r.out);
  const std::string expected = "builtins 1.2.3 " + std::string(v.at("session_id").as_string()) + " show 1 " +
                               rec.dir.string();
  CHECK(v.at("step_results").at(1).at("output") == boost::json::value(expected));
  CHECK_FALSE(v.at("context").as_object().contains("recipe"));  // read-only names stay out of the context
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("verbose (-v) shows every loop iteration with its output lines, tagged by instance id, -q and -v exclude each other") {
  temp_recipe rec("name: v\nsteps:\n  - id: fan\n    foreach: [a, b]\n    command: echo item {{item}}\n");
  auto r = run_arun({rec.file.string(), "-v"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("  -> fan[0]\n     fan[0] | item a\n  ok fan[0] completed"));
  CHECK_THAT(r.err, Catch::Contains("     fan[1] | item b\n"));
  r = run_arun({rec.file.string()});  // without -v an iteration's lines stay out of the progress
  CHECK(r.err.find("fan[1] | item b") == std::string::npos);
  r = run_arun({rec.file.string(), "-v", "-q"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--quiet excludes --verbose"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a loop variable named like a built-in hides it inside its loop, as in the Python runner") {
  temp_recipe rec("name: docs\nsteps:\n  - id: each\n    foreach: [{name: a}, {name: b}]\n    as: recipe\n"
                  "    collect: names\n    command: echo \"{{recipe.name}}\"\n"
                  "  - id: after\n    condition: \"recipe.name == 'docs'\"\n    command: echo \"{{recipe.name}}\"\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json", "-q"});
  CHECK(r.exit_code == 0);
  const auto v = arun::test::result_json(r);
  CHECK(v.at("context").at("names") == boost::json::parse(R"(["a","b"])"));
  CHECK(v.at("step_results").at(1).at("output") == "docs");  // outside the loop: the built-in again
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("options may come before the recipe") {
  temp_recipe rec("name: order\nsteps:\n  - id: a\n    command: echo {{who}}\ncontext: {who: nobody}\n");
  auto r = run_arun({"run", "--set", "who=someone", rec.file.string(), "--output-format", "json", "-q"});
  CHECK(r.exit_code == 0);
  CHECK(boost::json::parse(r.out).at("output") == "someone");
  r = run_arun({"validate", "--set", "x=1", "-R", rec.dir.string(), "recipe"});
  CHECK(r.exit_code == 0);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("an unclosed quote is an error, not a step that swallows the rest of the file") {
  temp_recipe rec("name: q\nsteps:\n  - id: a\n    command: \"echo hi\n  - id: b\n    command: echo b\n");
  const auto r = run_arun({"validate", rec.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(":4:14: error: invalid YAML: this quoted string is never closed"));
  // (Scripts bash also accepts: validate runs bash -n on them.)
  temp_recipe fine("name: q\nsteps:\n  - id: a\n    command: 'echo \"it''s\"'\n  - id: b\n    command: \"echo \\\"a b\\\"\"\n");
  CHECK(run_arun({"validate", fine.file.string()}).exit_code == 0);
  // Patterns of extglob parse as they will at run time, after the script's own shopt.
  temp_recipe extglob("name: g\nsteps:\n  - id: a\n    command: |\n      shopt -s extglob\n      ls !(x)\n");
  auto g = run_arun({"validate", extglob.file.string()});
  CHECK(g.exit_code == 0);
  CHECK(g.err.empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("validate checks many scripts with few bash processes and still names exactly the ones bash refuses") {
  // 150 distinct scripts: clean ones in batches; among them an empty-bodied one, a heredoc that
  // never ends (bash only warns), a closing brace that would end a wrapper early, and a bad
  // `fi` — only the last two are errors, each at its own step and line.
  std::string text = "name: many\nsteps:\n";
  for (int i = 0; i < 150; ++i) {
    text += "  - id: s" + std::to_string(i) + "\n    command: |\n";
    if (i == 40) text += "      # only a comment\n";
    else if (i == 41) text += "      cat <<EOF\n      never ended\n";
    else if (i == 77) text += "      echo a\n      }\n";
    else if (i == 120) text += "      if true; then echo " + std::to_string(i) + "\n      fi\n      fi\n";
    else if (i == 130) text += "      {\n";  // with 131's brace, one wrapper would hide both errors
    else if (i == 131) text += "      }\n";
    else text += "      echo " + std::to_string(i) + " | tr 0-9 a-j\n";
  }
  temp_recipe rec(text);
  const auto r = run_arun({"validate", rec.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("error: bash refuses the command of step 's77' (line 2 of the script): syntax error "
                                    "near unexpected token `}'"));
  CHECK_THAT(r.err, Catch::Contains("error: bash refuses the command of step 's120' (line 3 of the script): syntax "
                                    "error near unexpected token `fi'"));
  CHECK_THAT(r.err, Catch::Contains("error: bash refuses the command of step 's130'"));
  CHECK_THAT(r.err, Catch::Contains("error: bash refuses the command of step 's131'"));
  CHECK_THAT(r.err, Catch::EndsWith("\n4 errors\n"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("validate checks each command on its own: two steps' unbalanced quotes never pair up") {
  // Batched, `echo 'one` and `echo two'` made one string that closed and passed (issue 33).
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"echo 'one", "echo two'"}, {"echo \"one", "echo two\""}, {"echo $(echo one", "echo two)"},
      {"echo `echo one", "echo two`"}, {"echo ${x:-one", "echo two}"}};
  for (const auto& [first, second] : pairs) {
    INFO("steps: " << first << " / " << second);
    std::string text = "name: pair\nsteps:\n";
    for (int i = 0; i < 10; ++i) text += "  - id: c" + std::to_string(i) + "\n    command: echo " + std::to_string(i) + "\n";
    text += "  - id: a\n    command: |-\n      " + first + "\n  - id: b\n    command: |-\n      " + second + "\n";
    temp_recipe rec(text);
    const auto r = run_arun({"validate", rec.file.string()});
    CHECK(r.exit_code == 2);
    // (bash names the line of `$(`'s error as the script's end: then the command key is shown)
    CHECK_THAT(r.err, Catch::Contains(":25:7: error: bash refuses the command of step 'a'") ||
                          Catch::Contains(":24:14: error: bash refuses the command of step 'a'"));
    if (second == "echo two}") {  // a word of its own: only the first is wrong
      CHECK_THAT(r.err, Catch::EndsWith("\n1 error\n"));
      continue;
    }
    CHECK_THAT(r.err, Catch::Contains(":28:7: error: bash refuses the command of step 'b'"));
    CHECK_THAT(r.err, Catch::EndsWith("\n2 errors\n"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a reference in a code position is refused by validate at the reference, and run starts no step") {
  temp_recipe rec("name: code\ncontext:\n  v: hello\nsteps:\n  - id: first\n    command: touch ran; echo {{v}}\n"
                  "  - id: wrapped\n    command: find . -maxdepth 0 -exec sh -c 'echo {{v}}' \\;\n"
                  "  - id: piped\n    command: |\n      echo start\n      echo 'echo {{v}}' | ionice -c3 sh\n"
                  "  - id: data\n    command: find . -maxdepth 0 -exec sh -c 'echo \"$1\"' _ {{v}} \\;\n");
  const auto r = run_arun({"validate", rec.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(":8:51: error: {{v}} is in code that sh -c runs: its value would run as code there, "
                                    "whatever it holds, in step 'wrapped'"));
  CHECK_THAT(r.err, Catch::Contains(":12:18: error: {{v}} is in code that text piped into sh runs"));
  CHECK_THAT(r.err, Catch::Contains("pass the value as data instead: as an argument, sh -c '... \"$1\"' _ {{v}}"));
  CHECK_THAT(r.err, Catch::Contains("\"$RECIPE_VAR_v\""));
  CHECK_THAT(r.err, Catch::EndsWith("\n2 errors\n"));
  const auto run = run_arun({"run", rec.file.string(), "-C", rec.dir.string(), "-q"});
  CHECK(run.exit_code == 2);
  CHECK_FALSE(fs::exists(rec.dir / "ran"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a reference in the env value of a variable a program runs is refused, in a step's, a recipe's and a sub-recipe's env") {
  // bash expands BASH_ENV (`$( )` included) before it sources the file it names.
  temp_recipe rec("name: envcode\ncontext:\n  v: \"$(touch pwned)\"\n  w: data\nenv:\n  PROMPT_COMMAND: \"{{v}}\"\n"
                  "steps:\n  - id: a\n    env:\n      LOG: \"{{w}}\"\n      BASH_ENV: \"{{v}}\"\n    command: \"true\"\n"
                  "  - id: b\n    env:\n      GH_PAGER: \"{{w}}\"\n    command: \"true\"\n");
  auto r = run_arun({"validate", rec.file.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(":11:18: error: {{v}} is in code that the program reading BASH_ENV runs: its value would run "
                                    "as code there, whatever it holds, in step 'a'"));
  CHECK_THAT(r.err, Catch::Contains(":15:18: error: {{w}} is in code that the program reading GH_PAGER runs"));
  CHECK_THAT(r.err, Catch::Contains("error: {{v}} is in code that the program reading PROMPT_COMMAND runs"));
  CHECK_THAT(r.err, Catch::EndsWith("\n3 errors\n"));  // LOG's {{w}} is data
  r = run_arun({"run", rec.file.string(), "-C", rec.dir.string(), "-q"});
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(rec.dir / "pwned"));
  // A sub-recipe chosen at run time is refused when it is loaded.
  temp_recipe parent("name: parent\ncontext:\n  v: \"$(touch pwned)\"\nsteps:\n  - id: p\n    recipe: \"{{which}}\"\n"
                     "    context:\n      x: \"{{v}}\"\n");
  std::ofstream(parent.dir / "child.yaml") << "name: child\ncontext:\n  x: \"\"\nenv:\n  BASH_ENV: \"{{x}}\"\n"
                                               "steps:\n  - id: c\n    command: \"true\"\n";
  r = run_arun({"run", parent.file.string(), "-C", parent.dir.string(), "--set", "which=" + (parent.dir / "child.yaml").string(), "-q"});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.out, Catch::Contains("{{x}} is in code that the program reading BASH_ENV runs"));
  CHECK_FALSE(fs::exists(parent.dir / "pwned"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("extends paths stay inside the allowed roots, and names ignore the current directory") {
  temp_recipe outside("name: parent\nsteps:\n  - id: p\n    command: echo parent\n");
  temp_recipe rec("name: child\nextends: ../" + outside.dir.filename().string() + "/recipe.yaml\nsteps:\n"
                  "  - id: c\n    command: echo c\n");
  auto r = run_arun({"validate", rec.file.string(), "-C", rec.dir.string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("outside the recipe's directory"));
  // A file in the current directory named like a sub-recipe does not turn the name into a path.
  temp_recipe caller("name: c\nsteps:\n  - id: call\n    recipe: helper\n");
  std::ofstream(caller.dir / "helper.yaml") << "name: helper\nsteps:\n  - id: h\n    command: echo h\n";
  std::ofstream(caller.dir / "helper") << "not a recipe";
  r = run_arun({"validate", caller.file.string()}, caller.dir.string());
  CHECK(r.exit_code == 0);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("recipes over 1 MiB are refused unless --max-recipe-bytes raises the limit") {
  std::string big = "name: big\n# " + std::string(1100 * 1024, 'x') + "\nsteps:\n  - id: a\n    command: echo ok\n";
  temp_recipe rec(big);
  const auto refused = run_arun({rec.file.string(), "-q"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("--max-recipe-bytes raises it"));
  const auto raised = run_arun({rec.file.string(), "-q", "--max-recipe-bytes", "2000000"});
  CHECK(raised.exit_code == 0);
  // The limit is only a limit: 100 GB is not a buffer arun allocates (it used to be one).
  const auto huge = run_arun({rec.file.string(), "-q", "--max-recipe-bytes", "100000000000"});
  CHECK(huge.exit_code == 0);
  CHECK(huge.err.empty());
  // A file of exactly the limit is accepted; one byte more is not.
  const auto size = std::to_string(fs::file_size(rec.file));
  CHECK(run_arun({rec.file.string(), "-q", "--max-recipe-bytes", size}).exit_code == 0);
  const auto smaller = std::to_string(fs::file_size(rec.file) - 1);
  CHECK(run_arun({rec.file.string(), "-q", "--max-recipe-bytes", smaller}).exit_code == 2);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("durations: recipe fields and command-line options take seconds or units (500ms, 5m, 1h30m)") {
  const auto ok = run_arun({"recipes/tutorials/01-hello.yaml", "-q", "--kill-grace", "500ms", "--heartbeat", "1m",
                            "--rate-limit-delay", "2m", "--rate-limit-max-delay", "1h", "--pending-timeout", "1h30m"});
  CHECK(ok.exit_code == 0);
  const auto bad = run_arun({"recipes/tutorials/01-hello.yaml", "-q", "--kill-grace", "5x"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--kill-grace: '5x' is not a number of seconds or a duration such as 500ms, 90s, "
                                      "5m, 1h30m"));
  temp_recipe rec("name: d\nsteps:\n  - id: slow\n    command: sleep 30\n    timeout: 200ms\n");
  const auto r = run_arun({rec.file.string(), "--output-format", "json", "-q", "--kill-grace", "100ms"});
  CHECK(r.exit_code == 1);
  const auto v = boost::json::parse(r.out).as_object();
  CHECK(v.at("step_results").at(0).at("timed_out") == true);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("explain shows limits, budget, pacing and output schemas, and a dry run counts the items it can know") {
  temp_recipe rec("name: fleet\nlimits: {claude: 2}\nbudget: {cost_usd: 0.5, tokens: 100000}\n"
                  "rate_limiting: {max_concurrent_llm: 3, min_delay_ms: 250}\n"
                  "context:\n  files: [a.py, b.py, c.py, d.py]\n  lines: '[\"x\",\"y\"]'\n"
                  "steps:\n"
                  "  - id: review\n    foreach: \"{{files}}\"\n    prompt: review {{item}}\n    output: review\n"
                  "    output_schema: {type: object, required: [verdict]}\n"
                  "  - id: literal\n    foreach: '[\"a\",\"b\",\"c\"]'\n    command: echo {{item}}\n"
                  "  - id: texts\n    foreach: \"{{lines}}\"\n    command: echo {{item}}\n"
                  "  - id: later\n    foreach: \"{{review}}\"\n    command: echo {{item}}\n");
  auto r = run_arun({"explain", rec.file.string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("  limits (children at once): claude 2\n"));
  CHECK_THAT(r.out, Catch::Contains("  budget: $0.5, 100000 tokens (no new agent call once spent)\n"));
  CHECK_THAT(r.out, Catch::Contains("  agents at once: 3\n  between agent starts: at least 250 ms\n"));
  CHECK_THAT(r.out, Catch::Contains("       output schema (inline): {\"type\":\"object\",\"required\":[\"verdict\"]}; "
                                    "asked again up to 2 times\n"));
  r = run_arun({rec.file.string(), "--dry-run", "--agent-cli", "fake"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("foreach {{files}} (4 items)"));
  CHECK_THAT(r.out, Catch::Contains("foreach [\"a\",\"b\",\"c\"] (3 items)"));
  CHECK_THAT(r.out, Catch::Contains("foreach {{lines}} (2 items)"));
  CHECK_THAT(r.out, Catch::Contains("foreach {{review}}") && !Catch::Contains("{{review}} ("));  // known when it ran
  CHECK(arun::test::leftover_processes().empty());
}
