#pragma once
// Committing what an isolated step left in its worktree (docs/isolation.md "What arun
// commits", docs/security.md "Worktree commits"): only ever in the instance's own tree, on its
// own branch. Every git command arun runs on the tree is pinned to the registration arun made
// (`--git-dir=COMMON/worktrees/NAME --work-tree=TREE`), never found from the tree's `.git`,
// which the step controls: a step that deleted `.git`, pointed it elsewhere, swapped the tree
// for a symlink or checked out another branch gets no commit — its tree is kept and a warning
// says why. A detached HEAD that descends from the branch moves the branch (a fast-forward).

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

/// The worktree arun registered for an instance, as git recorded it when arun made it (before
/// the step ran).
struct worktree_registration {
  std::string root;       ///< the tree, as the session names it ({{step.worktree}})
  std::string real_root;  ///< its real path when made
  std::string admin;      ///< its registration: COMMON/worktrees/NAME (real path)
  std::string common;     ///< the checkout's common git directory (real path)
  std::string branch;     ///< arun/SESSION/INSTANCE
  std::string base;       ///< the run's base commit
};

/// The registration `git worktree add` has just made for `root` in the checkout `repo`; the
/// error text when git's records do not show one that points back to `root`.
boost::asio::awaitable<std::variant<worktree_registration, std::string>> find_registration(std::string repo,
                                                                                          std::string root,
                                                                                          std::string branch,
                                                                                          std::string base);

/// What to do with a finished instance's tree.
struct worktree_commit {
  bool keep = false;                  ///< not committed (or not all of it): the tree stays
  std::vector<std::string> warnings;  ///< each names the tree; the step stays completed
};

/// After a success: checks the tree is still the registered one on its branch, then commits
/// what the step left uncommitted (`message`), with repository hooks and fsmonitor off.
boost::asio::awaitable<worktree_commit> commit_worktree(worktree_registration reg, std::string message);

// The pure parts, for tests.

/// The directory a worktree's `.git` file names (`gitdir: PATH`, relative to `tree` when not
/// absolute); empty when the text is not such a file.
std::string gitdir_of(std::string_view dot_git_text, const std::string& tree);

/// HEAD of a tree when the step ended, as git reported it.
struct head_state {
  std::string ref;         ///< `refs/heads/X` when HEAD names a branch; empty when detached
  std::string commit;      ///< HEAD's commit; empty when it has none
  std::string branch_tip;  ///< the instance branch's commit; empty when the branch is gone
  bool descends = false;   ///< detached: `commit` descends from (or is) `branch_tip`
  bool tip_has_base = true;  ///< the branch tip contains the run's base commit
};

enum class commit_plan {
  on_branch,     ///< HEAD is the instance's branch: commit there
  fast_forward,  ///< detached ahead of the branch: commit there, then move the branch to it
  keep,          ///< no commit: keep the tree
};

struct commit_decision {
  commit_plan plan = commit_plan::keep;
  std::string why;  ///< for a warning: what the step changed (empty: nothing to say)
};

/// What to commit where, for the instance branch `branch` (`arun/SESSION/…`).
commit_decision decide_commit(const head_state& head, const std::string& branch);

}  // namespace arun::io
