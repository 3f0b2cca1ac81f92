// Isolated steps end to end (issue 19): a fan-out of 8 fake agents in git worktrees writes
// without cross-talk and each branch holds its agent's commit; a failure keeps its tree;
// kill -9 + resume + sessions clean leave no worktree registered; `isolation: copy` for a
// directory that is no checkout; validate places the field.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>

#include <signal.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::result_json;
using arun::test::run_arun;

namespace {

const std::string fake_agent = std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent";

// `sh -c COMMAND` in `dir`: its stdout (trimmed), or "<exit N>" when it fails.
std::string sh(const std::string& dir, const std::string& command) {
  std::string out;
  const std::string full = "cd '" + dir + "' && " + command + " 2>/dev/null";
  FILE* p = ::popen(full.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (const auto n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "<exit " + std::to_string(WEXITSTATUS(status)) + ">";
}

struct git_project {
  arun::test::temp_dir dir{"arun-e2e-isolation"};
  fs::path repo = dir.root / "repo";
  fs::path sessions = dir.root / "sessions";
  fs::path state = dir.root / "agent-state";
  std::string base;

  git_project() {
    fs::create_directories(repo);
    fs::create_directories(state);
    dir.write("repo/README.md", "base\n");
    REQUIRE(sh(repo.string(), "git init -q && git add README.md && git -c user.name=t -c user.email=t@t commit -qm base && "
                              "git rev-parse HEAD") != "<exit 1>");
    base = sh(repo.string(), "git rev-parse HEAD");
  }
  std::vector<std::string> env() const {
    return {"FAKE_AGENT_STATE=" + state.string(), "ARUN_FAKE_AGENT=" + fake_agent};
  }
  arun::test::arun_run arun(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string(), "--agent-cli", "fake", "--output-format", "json", "-q"});
    return run_arun(args, repo.string(), std::chrono::seconds(120), env());
  }
  // The worktrees git knows of in the checkout, the checkout itself included.
  std::size_t registered() const {
    const auto list = sh(repo.string(), "git worktree list --porcelain | grep -c '^worktree '");
    return list.starts_with("<exit") ? 0 : std::stoul(list);
  }
  std::size_t prunable() const {
    const auto n = sh(repo.string(), "git worktree list --porcelain | grep -c '^prunable' || true");
    return n.empty() || n.starts_with("<exit") ? 0 : std::stoul(n);
  }
};

}  // namespace

TEST_CASE("isolation e2e: 8 agents in worktrees write without cross-talk and each branch holds its commit") {
  git_project p;
  const auto recipe = p.dir.write("fix.yaml", "name: fix\nsteps:\n  - id: fix\n    foreach: [0, 1, 2, 3, 4, 5, 6, 7]\n"
                                              "    parallel: true\n    agent: ''\n    isolation: worktree\n"
                                              "    prompt: |\n      Fix item {{item}} in {{step.worktree}} on {{step.branch}}\n"
                                              "      FAKE: sleep 0.3\n      FAKE: write result.txt agent {{item}}\n"
                                              "      FAKE: write only-{{item}}.txt {{item}}\n      FAKE: reply done {{item}}\n"
                                              "    output: done\n");
  const auto r = p.arun({recipe, "-j", "8"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_json(r);
  const auto session = std::string(result.at("session_id").as_string());
  // The checkout itself was never written to.
  CHECK_FALSE(fs::exists(p.repo / "result.txt"));
  CHECK(sh(p.repo.string(), "git status --porcelain") == "");
  for (int i = 0; i < 8; ++i) {
    const auto branch = "arun/" + session + "/fix/" + std::to_string(i);
    INFO(branch);
    CHECK(sh(p.repo.string(), "git show " + branch + ":result.txt") == "agent " + std::to_string(i));
    CHECK(sh(p.repo.string(), "git rev-list --count " + p.base + ".." + branch) == "1");
    // Only its own file: no other agent's work on its branch.
    CHECK(sh(p.repo.string(), "git ls-tree --name-only " + branch + " | grep -c only-") == "1");
    CHECK(sh(p.repo.string(), "git show " + branch + ":only-" + std::to_string(i) + ".txt") == std::to_string(i));
  }
  // Removed after success: only the checkout is registered; the agents ran 8 at once.
  CHECK(p.registered() == 1);
  CHECK_FALSE(fs::exists(p.sessions / session / "worktrees" / "fix[0]"));
  const auto calls = arun::test::read_json_lines(p.state / "calls.jsonl");
  REQUIRE(calls.size() == 8);
  for (const auto& c : calls) CHECK(std::string(c.at("cwd").as_string()).find("/worktrees/fix[") != std::string::npos);
  // The prompt named the instance's tree and branch.
  CHECK(std::string(calls[0].at("stdin").as_string()).find("on arun/" + session + "/fix/") != std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("isolation e2e: a failure keeps its worktree and sessions clean unregisters what is kept") {
  git_project p;
  const auto recipe = p.dir.write("some.yaml", "name: some\nsteps:\n  - id: w\n    foreach: [a, b]\n    parallel: true\n"
                                               "    isolation: worktree\n    on_error: continue\n"
                                               "    command: echo {{item}} > out.txt; test {{item}} = a\n");
  const auto r = p.arun({recipe});
  REQUIRE(r.exit_code == 0);
  const auto result = result_json(r);
  const auto session = std::string(result.at("session_id").as_string());
  CHECK(p.registered() == 2);  // the checkout and w[1]'s kept tree
  const auto kept = p.sessions / session / "worktrees" / "w[1]";
  CHECK(read_text(kept / "out.txt") == "b\n");
  const auto& step = result.at("step_results").as_array().at(0).as_object();
  CHECK(step.at("iterations").at("failed") == boost::json::value(1));

  // --keep-worktrees keeps the successful ones too.
  const auto all = p.arun({recipe, "--keep-worktrees"});
  REQUIRE(all.exit_code == 0);
  CHECK(p.registered() == 4);

  const auto clean = run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", p.sessions.string()},
                              p.repo.string());
  CHECK(clean.exit_code == 0);
  CHECK(p.registered() == 1);
  CHECK(p.prunable() == 0);
  // The branches stay: they hold the work.
  CHECK(sh(p.repo.string(), "git branch --list 'arun/*' | wc -l") == "4");
}

TEST_CASE("isolation e2e: kill -9 in a worktree fan-out then resume and clean leave no worktree registered") {
  git_project p;
  const auto recipe = p.dir.write("slow.yaml", "name: slow\nsteps:\n  - id: s\n    foreach: [0, 1, 2, 3, 4, 5]\n"
                                               "    parallel: true\n    isolation: worktree\n"
                                               "    command: echo {{item}} > mine.txt; sleep 1\n");
  arun::test::temp_dir logs{"arun-e2e-isolation-kill"};
  {
    arun::test::background_arun run({recipe, "-C", p.repo.string(), "--session-dir", p.sessions.string(), "-j", "3", "-q"},
                                    logs.root, p.env());
    // Wait until the first trees are made, then kill arun outright.
    for (int i = 0; i < 200 && p.registered() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    REQUIRE(p.registered() >= 2);
    ::kill(run.pid, SIGKILL);
    CHECK(run.wait_exit(std::chrono::seconds(10)).has_value());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // the orphaned `sleep 1`s end
  CHECK(p.registered() >= 2);  // the crash left trees registered
  std::string session;
  for (const auto& e : fs::directory_iterator(p.sessions)) session = e.path().filename().string();
  REQUIRE_FALSE(session.empty());
  const auto resumed = run_arun({"resume", session, "--session-dir", p.sessions.string(), "-q", "--output-format", "json"},
                                p.repo.string(), std::chrono::seconds(120), p.env());
  INFO(resumed.err << resumed.out);
  REQUIRE(resumed.exit_code == 0);
  CHECK(p.registered() == 1);
  for (int i = 0; i < 6; ++i)
    CHECK(sh(p.repo.string(), "git show arun/" + session + "/s/" + std::to_string(i) + ":mine.txt") == std::to_string(i));
  const auto clean = run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", p.sessions.string()},
                              p.repo.string());
  CHECK(clean.exit_code == 0);
  CHECK(p.registered() == 1);
  CHECK(p.prunable() == 0);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("isolation e2e: copy runs each instance in a copy of a directory that is no checkout") {
  arun::test::temp_dir dir{"arun-e2e-isolation-copy"};
  dir.write("data/input.txt", "shared\n");
  const auto recipe = dir.write("copy.yaml", "name: copy\nsteps:\n  - id: c\n    foreach: [a, b, c]\n    parallel: true\n"
                                             "    isolation: copy\n    working_dir: data\n    on_error: continue\n"
                                             "    command: cat input.txt; echo {{item}} >> input.txt; pwd; test {{item}} != c\n"
                                             "    output: seen\n");
  const auto sessions = dir.root / "sessions";
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "-q", "--output-format", "json"}, dir.root.string());
  REQUIRE(r.exit_code == 0);
  const auto result = result_json(r);
  const auto session = std::string(result.at("session_id").as_string());
  CHECK(read_text(dir.root / "data" / "input.txt") == "shared\n");  // the original is untouched
  const auto& out = result.at("step_results").as_array().at(0).at("output").as_array();
  CHECK(std::string(out.at(0).as_string()).find("shared\n" + (sessions / session / "copies" / "c[0]").string()) == 0);
  CHECK_FALSE(fs::exists(sessions / session / "copies" / "c[0]"));   // removed after success
  CHECK(read_text(sessions / session / "copies" / "c[2]" / "input.txt") == "shared\nc\n");  // kept after failure
}

TEST_CASE("isolation e2e: validate places isolation with cache and on a loop step") {
  arun::test::temp_dir dir{"arun-e2e-isolation-validate"};
  const auto recipe = dir.write("bad.yaml", "name: bad\nsteps:\n  - id: a\n    command: x\n    cache: true\n"
                                            "    isolation: worktree\n  - id: b\n    isolation: sandbox\n    command: y\n");
  const auto r = run_arun({"validate", recipe}, dir.root.string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad.yaml:6:16: error: 'isolation' and 'cache' do not go together") != std::string::npos);
  CHECK(r.err.find("bad.yaml:8:16: error: 'isolation' must be one of worktree, copy, none") != std::string::npos);
}

TEST_CASE("isolation e2e: instances whose ids look alike get branches of their own and a symlinked directory works") {
  git_project p;
  fs::create_directories(p.repo / "sub");
  p.dir.write("repo/sub/keep.txt", "x\n");
  REQUIRE(sh(p.repo.string(), "git add sub && git -c user.name=t -c user.email=t@t commit -qm sub && echo ok") == "ok");
  fs::create_symlink(p.repo, p.dir.root / "link");
  // `a[1]` and a step `a-1`, `a.b` and `a-b`: four instances, four branches, each its own file.
  const auto recipe = p.dir.write("alike.yaml",
                                  "name: alike\nsteps:\n  - id: a\n    foreach: [0, 1]\n    isolation: worktree\n"
                                  "    command: echo {{item}} > a_{{item}}.txt\n"
                                  "  - id: a-1\n    isolation: worktree\n    command: echo dash > dash.txt\n"
                                  "  - id: a.b\n    isolation: worktree\n    command: echo dot > dot.txt\n"
                                  "  - id: a-b\n    isolation: worktree\n    command: echo ab > ab.txt\n"
                                  "  - id: via-link\n    isolation: worktree\n    working_dir: " +
                                      (p.dir.root / "link" / "sub").string() + "\n    command: pwd; cat keep.txt\n");
  const auto r = p.arun({recipe});
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  const auto result = result_json(r);
  const auto session = std::string(result.at("session_id").as_string());
  const auto show = [&](const std::string& branch, const std::string& file) {
    return sh(p.repo.string(), "git show 'arun/" + session + "/" + branch + ":" + file + "'");
  };
  CHECK(show("a/1", "a_1.txt") == "1");
  CHECK(show("a-1", "dash.txt") == "dash");
  CHECK(show("a%2Eb", "dot.txt") == "dot");
  CHECK(show("a-b", "ab.txt") == "ab");
  CHECK(show("a-1", "a_1.txt").starts_with("<exit"));  // not a[1]'s work
  // Through the symlink the step ran inside its worktree, in `sub`.
  const auto& via = result.at("step_results").as_array().at(4).as_object();
  CHECK(std::string(via.at("output").as_string()) ==
        (p.sessions / session / "worktrees" / "via-link" / "sub").string() + "\nx");
  CHECK(p.registered() == 1);
}

TEST_CASE("isolation e2e: sessions clean leaves the user's own worktrees alone and copy refuses to copy its session") {
  git_project p;
  // The user's own worktree, on a disk that is not there right now.
  REQUIRE(sh(p.repo.string(), "git worktree add -q ../userwt && echo ok") == "ok");
  fs::rename(p.dir.root / "userwt", p.dir.root / "userwt-away");
  const auto recipe = p.dir.write("one.yaml", "name: one\nsteps:\n  - id: w\n    isolation: worktree\n"
                                              "    command: exit 1\n");
  CHECK(p.arun({recipe}).exit_code == 1);  // its tree is kept
  const auto clean = run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", p.sessions.string()},
                              p.repo.string());
  CHECK(clean.exit_code == 0);
  fs::rename(p.dir.root / "userwt-away", p.dir.root / "userwt");
  CHECK(sh((p.dir.root / "userwt").string(), "git status --porcelain && echo fine") == "fine");
  CHECK(p.registered() == 2);  // the checkout and the user's worktree; arun's is gone

  // A session inside the directory a copy is made of is refused, not copied into itself.
  const auto copy = p.dir.write("copy.yaml", "name: copy\nsteps:\n  - id: c\n    isolation: copy\n    command: pwd\n");
  const auto refused = run_arun({copy, "--session-dir", (p.repo / ".sessions").string(), "-q", "--output-format", "json"},
                                p.repo.string());
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.find("which would copy itself") != std::string::npos);
}

TEST_CASE("isolation e2e: a resume never has git remove the worktree a link in the tree's place leads to") {
  git_project p;
  // Another worktree of the user's, with work no commit has.
  REQUIRE(sh(p.repo.string(), "git worktree add -q ../other -b other && echo ok") == "ok");
  p.dir.write("other/precious.txt", "uncommitted work\n");
  const auto recipe = p.dir.write("w.yaml", "name: w\nsteps:\n  - id: s\n    isolation: worktree\n    command: exit 3\n");
  const auto r = p.arun({recipe});
  REQUIRE(r.exit_code == 1);
  const auto session = std::string(result_json(r).at("session_id").as_string());
  // The failed step's tree, kept, becomes a link to the other worktree.
  const auto tree = p.sessions / session / "worktrees" / "s";
  fs::remove_all(tree);
  REQUIRE(sh(p.repo.string(), "git worktree prune && echo ok") == "ok");
  fs::create_directory_symlink(p.dir.root / "other", tree);
  // An index that no longer lists the tree: the resume's start removes nothing, the step's
  // new attempt meets the link where its tree goes.
  std::ofstream(p.sessions / session / "workspaces.json", std::ios::trunc) << "{\"trees\":{}}\n";
  const auto resumed = run_arun({"resume", session, "--session-dir", p.sessions.string(), "-q"}, p.repo.string(),
                                std::chrono::seconds(120), p.env());
  INFO(resumed.err);
  REQUIRE(fs::exists(p.dir.root / "other" / "precious.txt"));
  CHECK(read_text(p.dir.root / "other" / "precious.txt") == "uncommitted work\n");
  CHECK(sh(p.repo.string(), "git worktree list --porcelain | grep -c '^worktree .*/other$'") == "1");
  CHECK(fs::is_directory(fs::symlink_status(tree)));  // the step's own tree made anew in its place
}
