#pragma once
// The trees of isolated steps (`isolation: worktree | copy`), kept in their session: a git
// worktree per instance under `SESSION/worktrees/`, on the branch `arun/SESSION/INSTANCE`,
// made from the run's base commit (HEAD of the checkout when the session first needed it, the
// same for every resume), or a copy under `SESSION/copies/`. `SESSION/workspaces.json` lists
// every tree with its checkout, so a resume and `arun sessions clean` can unregister the ones a
// crash left (`git worktree remove`, `git worktree prune`): no worktree stays registered in
// the user's checkout after its session is gone. Branches stay: they hold the work.

#include "session/worktree_commit.hpp"

#include <arun/run_services.hpp>

#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <memory>
#include <utility>

#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <string>
#include <vector>

namespace arun::io {

class session_workspaces final : public workspace_provider {
public:
  /// `session_dir`: where the trees and the index live; `base_dir`: the run's working
  /// directory (relative working_dirs are below it); `keep_all`: --keep-worktrees.
  session_workspaces(std::string session_dir, std::string session_id, std::string base_dir, bool keep_all);

  boost::asio::awaitable<std::variant<workspace, std::string>> make(isolation_kind kind, std::string instance,
                                                                    std::string working_dir) override;
  boost::asio::awaitable<std::vector<std::string>> finish(isolation_kind kind, workspace w, std::string instance,
                                                          bool succeeded) override;

private:
  boost::asio::awaitable<std::variant<workspace, std::string>> make_worktree(const std::string& instance,
                                                                             const std::string& dir);
  boost::asio::awaitable<std::variant<workspace, std::string>> make_copy(const std::string& instance,
                                                                         const std::string& dir);
  void remember(const std::string& instance, const std::string& kind, const std::string& root,
                const std::string& repo, const std::string& branch);
  void forget(const std::string& instance);
  std::string save_index() const;

  // One git worktree administration at a time per checkout (add, remove): git's is not safe
  // to run twice at once. A hold releases on destruction.
  class repo_hold {
  public:
    repo_hold(session_workspaces* owner, std::string repo) : owner_(owner), repo_(std::move(repo)) {}
    repo_hold(repo_hold&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), repo_(std::move(o.repo_)) {}
    repo_hold(const repo_hold&) = delete;
    repo_hold& operator=(const repo_hold&) = delete;
    repo_hold& operator=(repo_hold&&) = delete;
    ~repo_hold() {
      if (owner_) owner_->unlock(repo_);
    }

  private:
    session_workspaces* owner_;
    std::string repo_;
  };
  boost::asio::awaitable<repo_hold> lock(const std::string& repo);
  void unlock(const std::string& repo) noexcept;
  struct repo_lock {
    bool busy = false;
    std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters;
  };
  std::map<std::string, repo_lock> locks_;

  std::string session_dir_, session_id_, base_dir_;
  bool keep_all_;
  std::map<std::string, std::string> bases_;  ///< checkout -> the run's base commit
  struct tree {
    std::string kind, root, repo, branch;
    bool kept = false;  ///< kept after a success (not committed): a resume leaves it
  };
  std::map<std::string, tree> trees_;  ///< instance -> its live or kept tree
  /// instance -> the registration its worktree got when made: commits are pinned to it.
  std::map<std::string, worktree_registration> registrations_;
};

/// The branch of an instance: `arun/SESSION/fan-3/review` for `fan[3]/review` (what git
/// allows in a ref name, nothing that could pass for another instance's).
std::string instance_branch(const std::string& session_id, const std::string& instance);

/// Removes the trees `SESSION/workspaces.json` lists except those `keep` says to keep (by
/// instance id; none: remove all), then this session's registrations in their checkouts whose
/// trees are gone. The index is data: a tree is removed only where arun makes it
/// (`SESSION/worktrees|copies/INSTANCE`, through the session's descriptor, never following a
/// symlink), and an entry naming another path is left alone. What could not be removed or was
/// refused, one message each.
std::vector<std::string> remove_session_workspaces(const std::string& session_dir,
                                                   const std::function<bool(std::string_view instance)>& keep = {});

/// The trees `SESSION/workspaces.json` lists that exist where arun makes them (below the
/// session's `worktrees/` or `copies/`): a failed step's kept work, or --keep-worktrees'.
std::vector<std::string> kept_session_trees(const std::string& session_dir);

}  // namespace arun::io
