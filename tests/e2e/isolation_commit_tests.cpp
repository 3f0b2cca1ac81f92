// Worktree commits end to end (issue 33, docs/isolation.md "What arun commits"): whatever a step
// does to its worktree — removes `.git`, points it elsewhere, swaps the tree for a symlink,
// detaches HEAD, checks out another branch — arun commits only in the tree it registered, on
// the instance's branch: the enclosing repository, the user's checkout and the user's branches
// get nothing, and a tree it cannot commit is kept with a warning naming it.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::result_json;
using arun::test::run_arun;

namespace {

// `sh -c COMMAND` in `dir`: its stdout (trimmed), or "<exit N>" when it fails.
std::string sh(const fs::path& dir, const std::string& command) {
  std::string out;
  const std::string full = "cd '" + dir.string() + "' && " + command + " 2>/dev/null";
  FILE* p = ::popen(full.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (const auto n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "<exit " + std::to_string(WEXITSTATUS(status)) + ">";
}

const std::string commit_as_t = "git -c user.name=t -c user.email=t@t commit -qm";

// A checkout with one commit, sessions at `sessions` (inside it, or elsewhere).
struct checkout {
  arun::test::temp_dir dir{"arun-e2e-worktree-commit"};
  fs::path home = dir.root / "home";
  fs::path repo = home / "project";
  fs::path sessions = dir.root / "sessions";
  std::string base;

  checkout() {
    fs::create_directories(repo);
    dir.write("home/project/README.md", "base\n");
    REQUIRE(sh(repo, "git init -q -b master && git add README.md && " + commit_as_t + " base && echo ok") == "ok");
    base = sh(repo, "git rev-parse HEAD");
  }
  // A run without -q: its warnings are on stderr.
  arun::test::arun_run arun(const std::string& recipe) const {
    return run_arun({recipe, "--session-dir", sessions.string(), "--output-format", "json", "--progress", "plain"},
                    repo.string(), std::chrono::seconds(120), {"HOME=" + home.string()});
  }
  std::string session_of(const arun::test::arun_run& r) const {
    return std::string(result_json(r).at("session_id").as_string());
  }
  std::string rev(const std::string& ref) const { return sh(repo, "git rev-parse --verify -q '" + ref + "'"); }
  // The step's status in the result.
  static std::string status(const arun::test::arun_run& r, std::size_t i) {
    return std::string(result_json(r).at("step_results").as_array().at(i).at("status").as_string());
  }
};

std::string one_step(const std::string& command) {
  return "name: w\nsteps:\n  - id: w\n    isolation: worktree\n    command: |\n      " + command + "\n";
}

}  // namespace

TEST_CASE("worktree commit e2e: rm -rf .git in a tree inside a dotfiles HOME commits nothing there") {
  checkout c;
  // $HOME is a git repository (dotfiles) holding a secret it does not track; the sessions are
  // inside it (the default ~/.local/state/arun/sessions).
  c.sessions = c.home / ".local/state/arun/sessions";
  c.dir.write("home/.bashrc", "alias x=y\n");
  c.dir.write("home/.ssh/id_rsa", "-----BEGIN SECRET-----\n");
  REQUIRE(sh(c.home, "git init -q -b main && git add .bashrc && " + commit_as_t + " dotfiles && echo ok") == "ok");
  const auto home_head = sh(c.home, "git rev-parse HEAD");
  const auto recipe = c.dir.write("r.yaml", one_step("rm -rf .git && echo work > work.txt"));
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(checkout::status(r, 0) == "completed");
  // The enclosing repository: no new commit, nothing staged, the secret not in its index.
  CHECK(sh(c.home, "git rev-parse HEAD") == home_head);
  CHECK(sh(c.home, "git diff --cached --name-only") == "");
  CHECK(sh(c.home, "git ls-files") == ".bashrc");
  // The instance's branch stays at the base; its tree is kept with the work, and a warning
  // names it.
  const auto session = c.session_of(r);
  CHECK(c.rev("arun/" + session + "/w") == c.base);
  const auto tree = c.sessions / session / "worktrees" / "w";
  CHECK(arun::test::read_text(tree / "work.txt") == "work\n");
  CHECK(r.err.find("warning: w: worktree kept at " + tree.string() + ", nothing committed: its .git") !=
        std::string::npos);
}

TEST_CASE("worktree commit e2e: sessions inside the user's checkout: the user's branch and index are untouched") {
  checkout c;
  c.sessions = c.repo / ".arun-sessions";
  // The user's own uncommitted work: a change, a staged file, an untracked one.
  c.dir.write("home/project/README.md", "the user's edit\n");
  c.dir.write("home/project/staged.txt", "staged\n");
  c.dir.write("home/project/notes.txt", "untracked\n");
  REQUIRE(sh(c.repo, "git add staged.txt && echo ok") == "ok");
  const auto status_before = sh(c.repo, "git status --porcelain -- README.md staged.txt notes.txt");
  // Three ways a step leaves its tree's repository: .git removed, .git pointing to the user's
  // checkout, the tree swapped for a symlink to it.
  const auto recipe = c.dir.write(
      "r.yaml", "name: w\nsteps:\n"
                "  - id: gone\n    isolation: worktree\n    command: rm -rf .git && echo a > a.txt\n"
                "  - id: elsewhere\n    isolation: worktree\n    command: |\n      printf 'gitdir: " +
                    (c.repo / ".git").string() + "\\n' > .git && echo b > b.txt\n"
                    "  - id: swapped\n    isolation: worktree\n    command: |\n"
                    "      d=$(pwd); cd .. && rm -rf \"$d\" && ln -s " +
                    c.repo.string() + " \"$d\"\n");
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  const auto session = c.session_of(r);
  for (std::size_t i = 0; i < 3; ++i) CHECK(checkout::status(r, i) == "completed");
  CHECK(c.rev("master") == c.base);
  CHECK(sh(c.repo, "git status --porcelain -- README.md staged.txt notes.txt") == status_before);
  CHECK(sh(c.repo, "git diff --cached --name-only") == "staged.txt");
  CHECK(arun::test::read_text(c.repo / "README.md") == "the user's edit\n");
  for (const auto* id : {"gone", "elsewhere", "swapped"}) {
    INFO(id);
    CHECK(c.rev("arun/" + session + "/" + id) == c.base);
    const auto tree = c.sessions / session / "worktrees" / id;
    CHECK(r.err.find("warning: " + std::string(id) + ": worktree kept at " + tree.string()) != std::string::npos);
  }
  CHECK(r.err.find("replaced by a symlink") != std::string::npos);
  // The symlink is kept as it is: the checkout it points to is whole.
  CHECK(fs::is_symlink(c.sessions / session / "worktrees" / "swapped"));
  CHECK(fs::exists(c.repo / ".git"));
}

TEST_CASE("worktree commit e2e: a detached HEAD ahead of the branch moves the branch, with a warning") {
  checkout c;
  const auto recipe = c.dir.write("r.yaml", one_step("git checkout -q --detach && echo one > one.txt && git add one.txt && " +
                                                     commit_as_t + " one && echo two > two.txt"));
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  const auto branch = "arun/" + c.session_of(r) + "/w";
  CHECK(sh(c.repo, "git rev-list --count " + c.base + ".." + branch) == "2");  // the step's commit and the leftovers
  CHECK(sh(c.repo, "git show " + branch + ":one.txt") == "one");
  CHECK(sh(c.repo, "git show " + branch + ":two.txt") == "two");
  CHECK(r.err.find("HEAD was detached at") != std::string::npos);
  CHECK(r.err.find(branch + " moved to it (a fast-forward)") != std::string::npos);
  CHECK_FALSE(fs::exists(c.sessions / c.session_of(r) / "worktrees" / "w"));  // all on the branch: removed
  CHECK(sh(c.repo, "git worktree list | wc -l") == "1");
}

TEST_CASE("worktree commit e2e: a detached HEAD on another history keeps the tree and the branch") {
  checkout c;
  const auto recipe = c.dir.write(
      "r.yaml", one_step("o=$(git -c user.name=t -c user.email=t@t commit-tree -m orphan $(git write-tree)) && "
                         "git checkout -q --detach $o && echo x > x.txt"));
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(checkout::status(r, 0) == "completed");
  const auto session = c.session_of(r);
  CHECK(c.rev("arun/" + session + "/w") == c.base);
  const auto tree = c.sessions / session / "worktrees" / "w";
  CHECK(arun::test::read_text(tree / "x.txt") == "x\n");
  CHECK(r.err.find("worktree kept at " + tree.string() + ", nothing committed: HEAD is detached at") != std::string::npos);
  CHECK(r.err.find("which does not descend from arun/" + session + "/w") != std::string::npos);
}

TEST_CASE("worktree commit e2e: another branch checked out in the tree gets no commit of arun's") {
  checkout c;
  // The user's own feature branch, not checked out anywhere.
  REQUIRE(sh(c.repo, "git branch feature && echo ok") == "ok");
  const auto recipe = c.dir.write(
      "r.yaml", "name: w\nsteps:\n"
                "  - id: new\n    isolation: worktree\n    command: git checkout -q -b other && echo o > o.txt\n"
                "  - id: users\n    isolation: worktree\n    command: git checkout -q feature && echo f > f.txt\n"
                "  - id: chained\n    isolation: worktree\n    command: |\n"
                "      git symbolic-ref \"$(git symbolic-ref HEAD)\" refs/heads/feature && echo s > s.txt\n");
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  const auto session = c.session_of(r);
  CHECK(c.rev("other") == c.base);
  CHECK(c.rev("feature") == c.base);
  CHECK(c.rev("master") == c.base);
  CHECK(c.rev("arun/" + session + "/new") == c.base);
  CHECK(c.rev("arun/" + session + "/users") == c.base);
  CHECK(r.err.find("HEAD is on refs/heads/other, not on its branch arun/" + session + "/new") != std::string::npos);
  CHECK(r.err.find("HEAD is on refs/heads/feature, not on its branch arun/" + session + "/users") != std::string::npos);
  CHECK(r.err.find("warning: chained: worktree kept at") != std::string::npos);
  CHECK(arun::test::read_text(c.sessions / session / "worktrees" / "users" / "f.txt") == "f\n");
}

TEST_CASE("worktree commit e2e: a branch moved off the base commits there with a warning, a kept tree survives resume") {
  checkout c;
  const auto recipe = c.dir.write(
      "r.yaml", "name: w\nsteps:\n"
                "  - id: back\n    isolation: worktree\n    command: |\n"
                "      git reset -q --hard $(git -c user.name=t -c user.email=t@t commit-tree -m orphan $(git write-tree))"
                " && echo b > b.txt\n"
                "  - id: gone\n    isolation: worktree\n    command: rm -rf .git && echo g > g.txt\n"
                "  - id: last\n    command: exit 1\n");
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 1);
  const auto session = c.session_of(r);
  const auto back = "arun/" + session + "/back";
  CHECK(sh(c.repo, "git show " + back + ":b.txt") == "b");
  CHECK(sh(c.repo, "git merge-base --is-ancestor " + c.base + " " + back + " || echo behind") == "behind");
  CHECK(r.err.find(back + " no longer contains the run's base commit") != std::string::npos);
  // The tree kept after a success is not one a resume removes as a crash's leftover.
  const auto kept = c.sessions / session / "worktrees" / "gone";
  REQUIRE(fs::exists(kept / "g.txt"));
  const auto resumed = run_arun({"resume", session, "--session-dir", c.sessions.string(), "-q"}, c.repo.string(),
                                std::chrono::seconds(120), {"HOME=" + c.home.string()});
  CHECK(resumed.exit_code == 1);
  CHECK(fs::exists(kept / "g.txt"));
}

TEST_CASE("worktree commit e2e: arun's commit runs no hook of the repository's, post-commit included") {
  checkout c;
  // Hooks a step could plant (they are the checkout's, shared by its worktrees): --no-verify
  // alone skips pre-commit and commit-msg, not these.
  for (const auto* hook : {"prepare-commit-msg", "post-commit", "pre-commit"})
    c.dir.write("home/project/.git/hooks/" + std::string(hook), "#!/bin/sh\ntouch \"" +
                                                                     (c.dir.root / hook).string() + "\"\n");
  REQUIRE(sh(c.repo, "chmod +x .git/hooks/* && echo ok") == "ok");
  const auto recipe = c.dir.write("r.yaml", one_step("echo w > w.txt"));
  const auto r = c.arun(recipe);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(sh(c.repo, "git show arun/" + c.session_of(r) + "/w:w.txt") == "w");
  for (const auto* hook : {"prepare-commit-msg", "post-commit", "pre-commit"}) {
    INFO(hook);
    CHECK_FALSE(fs::exists(c.dir.root / hook));
  }
}
