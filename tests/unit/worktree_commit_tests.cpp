// Where arun commits an isolated step's leftovers (docs/isolation.md "What arun commits"): the
// decision from HEAD's state, and the reading of a worktree's `.git` file.
#include <catch2/catch.hpp>

#include "session/worktree_commit.hpp"

using arun::io::commit_plan;
using arun::io::decide_commit;
using arun::io::gitdir_of;
using arun::io::head_state;

namespace {
const std::string branch = "arun/S1/fix/0";
const std::string tip = "1111111111111111111111111111111111111111";
const std::string ahead = "2222222222222222222222222222222222222222";

head_state on(std::string ref) {
  head_state h;
  h.ref = std::move(ref);
  h.commit = tip;
  h.branch_tip = tip;
  return h;
}
}  // namespace

TEST_CASE("worktree commit: on its own branch it commits there, quietly") {
  const auto d = decide_commit(on("refs/heads/" + branch), branch);
  CHECK(d.plan == commit_plan::on_branch);
  CHECK(d.why.empty());
}

TEST_CASE("worktree commit: another branch checked out is never committed on") {
  for (const auto* other : {"refs/heads/master", "refs/heads/feature", "refs/heads/arun/S1/fix/1", "refs/heads/arun/S1/fix/0x"}) {
    INFO(other);
    const auto d = decide_commit(on(other), branch);
    CHECK(d.plan == commit_plan::keep);
    CHECK(d.why.find(other) != std::string::npos);
  }
}

TEST_CASE("worktree commit: a branch moved behind the base commits and says so, a deleted one keeps") {
  auto back = on("refs/heads/" + branch);
  back.tip_has_base = false;
  const auto d = decide_commit(back, branch);
  CHECK(d.plan == commit_plan::on_branch);
  CHECK(d.why.find("base commit") != std::string::npos);
  auto gone = on("refs/heads/" + branch);
  gone.branch_tip.clear();
  CHECK(decide_commit(gone, branch).plan == commit_plan::keep);
}

TEST_CASE("worktree commit: a detached HEAD ahead of the branch fast-forwards it, any other keeps the tree") {
  head_state h;
  h.commit = ahead;
  h.branch_tip = tip;
  h.descends = true;
  auto d = decide_commit(h, branch);
  CHECK(d.plan == commit_plan::fast_forward);
  CHECK(d.why.find("detached") != std::string::npos);
  h.descends = false;  // an unrelated history, or behind the branch
  d = decide_commit(h, branch);
  CHECK(d.plan == commit_plan::keep);
  CHECK(d.why.find("does not descend") != std::string::npos);
  h.descends = true;
  h.branch_tip.clear();  // the branch deleted
  CHECK(decide_commit(h, branch).plan == commit_plan::keep);
  head_state none;  // no HEAD commit at all
  CHECK(decide_commit(none, branch).plan == commit_plan::keep);
}

TEST_CASE("worktree commit: a .git file is read as git writes it, and nothing else") {
  CHECK(gitdir_of("gitdir: /r/.git/worktrees/w\n", "/s/w") == "/r/.git/worktrees/w");
  CHECK(gitdir_of("gitdir: /r/.git/worktrees/w", "/s/w") == "/r/.git/worktrees/w");
  CHECK(gitdir_of("gitdir: ../../r/.git/worktrees/w\n", "/s/w") == "/r/.git/worktrees/w");
  CHECK(gitdir_of("gitdir: /r/.git/worktrees/w\r\n", "/s/w") == "/r/.git/worktrees/w");
  CHECK(gitdir_of("", "/s/w").empty());
  CHECK(gitdir_of("gitdir: \n", "/s/w").empty());
  CHECK(gitdir_of("gitdir:/r/.git\n", "/s/w").empty());
  CHECK(gitdir_of("ref: refs/heads/x\n", "/s/w").empty());
  CHECK(gitdir_of("gitdir: /a\ngitdir: /b\n", "/s/w").empty());
  CHECK(gitdir_of(std::string_view("gitdir: /a\0b\n", 13), "/s/w").empty());
}
