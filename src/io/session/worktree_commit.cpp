#include "session/worktree_commit.hpp"

#include "executor/step_environment.hpp"
#include "session/git_outcome.hpp"
#include "process/supervisor.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <optional>

namespace arun::io {
namespace {

namespace fs = std::filesystem;


// Variables that tell git where a repository is: arun started from a git hook has them, and
// they would take git elsewhere than the tree it is asked about.
bool names_a_repository(std::string_view kv) {
  static constexpr std::array<std::string_view, 8> names = {
      "GIT_DIR=",         "GIT_WORK_TREE=",    "GIT_INDEX_FILE=", "GIT_OBJECT_DIRECTORY=", "GIT_ALTERNATE_OBJECT_DIRECTORIES=",
      "GIT_COMMON_DIR=",  "GIT_NAMESPACE=",    "GIT_CEILING_DIRECTORIES="};
  for (const auto n : names)
    if (kv.starts_with(n)) return true;
  return false;
}

process_spec git_spec(std::vector<std::string> argv) {
  process_spec spec;
  spec.launch.argv = std::move(argv);
  for (auto& kv : current_environment())
    if (!names_a_repository(kv)) spec.launch.env.push_back(std::move(kv));
  spec.launch.env.emplace_back("GIT_TERMINAL_PROMPT=0");
  spec.timeout = std::chrono::minutes(5);
  spec.kill_grace = std::chrono::seconds(2);
  spec.label = "git";
  return spec;
}

// git on the registered tree, never on what the tree's `.git` names; the repository's hooks
// and fsmonitor (programs the step could have configured) are not run (docs/security.md).
process_spec pinned(const worktree_registration& r, const std::vector<std::string>& args) {
  auto argv = words("git", "-C", r.real_root, "--git-dir=" + r.admin, "--work-tree=" + r.real_root, "-c",
                    "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false");
  argv.insert(argv.end(), args.begin(), args.end());
  return git_spec(std::move(argv));
}

boost::asio::awaitable<git_outcome> run(process_spec spec) { co_return git_outcome_of(co_await run_process(std::move(spec))); }

std::string real(const std::string& path) {
  std::error_code ec;
  auto p = fs::canonical(path, ec);
  return ec ? std::string() : p.string();
}

// A small regular file, not through a symlink and never blocking (a FIFO the step planted).
std::optional<std::string> read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 4096) {
    std::string buf(static_cast<std::size_t>(st.st_size), '\0');
    const auto n = ::read(fd, buf.data(), buf.size());
    if (n >= 0) text = buf.substr(0, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::string without_line_ends(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Empty when the tree is still the directory arun made, and its `.git` and its registration
// still point to each other; else what the step changed.
std::string tree_changed(const worktree_registration& r) {
  std::error_code ec;
  const auto st = fs::symlink_status(r.root, ec);
  if (ec || !fs::exists(st)) return "the tree is gone";
  if (fs::is_symlink(st)) return "the tree was replaced by a symlink (to " + fs::read_symlink(r.root, ec).string() + ")";
  if (!fs::is_directory(st)) return "the tree is no longer a directory";
  if (const auto now = real(r.root); now != r.real_root) return "the tree's path now leads to " + now;
  const auto dot_git = r.real_root + "/.git";
  const auto text = read_small_file(dot_git);
  if (!text) return "its .git is no longer the file git made (removed, or replaced by a directory or a symlink)";
  const auto named = gitdir_of(*text, r.real_root);
  if (named.empty() || real(named) != r.admin)
    return "its .git points to " + (named.empty() ? std::string("nothing") : named) + ", not to its registration " + r.admin;
  const auto back = read_small_file(r.admin + "/gitdir");
  if (!back || real(without_line_ends(*back)) != real(dot_git)) return "its registration " + r.admin + " no longer names the tree";
  return {};
}

// The same, as git sees it through the registration.
boost::asio::awaitable<std::string> git_sees_other(const worktree_registration& r) {
  auto top = co_await run(pinned(r, words("rev-parse", "--show-toplevel")));
  if (!top.ok) co_return "git cannot read its registration " + r.admin + ": " + top.why;
  if (real(top.out) != r.real_root) co_return "git places its top level at " + top.out;
  auto common = co_await run(pinned(r, words("rev-parse", "--path-format=absolute", "--git-common-dir")));
  if (!common.ok || real(common.out) != r.common)
    co_return "its registration now leads to the repository " + (common.ok ? common.out : common.why);
  co_return std::string();
}

boost::asio::awaitable<head_state> read_head(const worktree_registration& r) {
  head_state h;
  // symbolic-ref follows a chain of symbolic refs to its end: a branch made to point to
  // another is seen as that other.
  auto ref = co_await run(pinned(r, words("symbolic-ref", "-q", "HEAD")));
  if (ref.ok) h.ref = ref.out;
  auto commit = co_await run(pinned(r, words("rev-parse", "--verify", "-q", "HEAD^{commit}")));
  if (commit.ok) h.commit = commit.out;
  auto tip = co_await run(pinned(r, words("rev-parse", "--verify", "-q", "refs/heads/" + r.branch + "^{commit}")));
  if (!tip.ok) co_return h;
  h.branch_tip = tip.out;
  auto has_base = co_await run(pinned(r, words("merge-base", "--is-ancestor", r.base, h.branch_tip)));
  h.tip_has_base = has_base.ok;
  if (h.ref.empty() && !h.commit.empty()) {
    auto descends = co_await run(pinned(r, words("merge-base", "--is-ancestor", h.branch_tip, h.commit)));
    h.descends = descends.ok;
  }
  co_return h;
}

// What the step left uncommitted, committed where HEAD is; the error text, or empty.
boost::asio::awaitable<std::string> commit_leftovers(const worktree_registration& r, const std::string& message) {
  auto added = co_await run(pinned(r, words("add", "-A")));
  if (!added.ok) co_return "git add failed: " + added.why;
  auto unchanged = co_await run(pinned(r, words("diff-index", "--cached", "--quiet", "HEAD", "--")));
  if (unchanged.ok) co_return std::string();
  auto commit = words("commit", "--quiet", "--no-verify", "-m", message);
  auto email = co_await run(pinned(r, words("config", "user.email")));
  auto name = co_await run(pinned(r, words("config", "user.name")));
  if (!email.ok || !name.ok) {
    const auto identity = words("-c", "user.name=arun", "-c", "user.email=arun@localhost");
    commit.insert(commit.begin(), identity.begin(), identity.end());
  }
  auto committed = co_await run(pinned(r, commit));
  if (!committed.ok) co_return "committing its changes failed: " + committed.why;
  co_return std::string();
}

// Detached ahead of the branch: the leftovers committed there, then the branch moved to HEAD
// only if it is still where it was seen (update-ref's old value), and HEAD put back on it.
boost::asio::awaitable<std::string> fast_forward(const worktree_registration& r, const head_state& h,
                                                 const std::string& message) {
  if (auto failed = co_await commit_leftovers(r, message); !failed.empty()) co_return failed;
  auto now = co_await run(pinned(r, words("rev-parse", "--verify", "-q", "HEAD^{commit}")));
  if (!now.ok) co_return "cannot read HEAD: " + now.why;
  auto moved = co_await run(
      pinned(r, words("update-ref", "-m", message, "refs/heads/" + r.branch, now.out, h.branch_tip)));
  if (!moved.ok) co_return "moving " + r.branch + " failed: " + moved.why;
  auto attached = co_await run(pinned(r, words("symbolic-ref", "HEAD", "refs/heads/" + r.branch)));
  (void)attached;  // the branch holds the work either way
  co_return std::string();
}

std::string kept(const worktree_registration& r, const std::string& why) {
  return "worktree kept at " + r.root + ", nothing committed: " + why;
}

}  // namespace

std::string gitdir_of(std::string_view text, const std::string& tree) {
  constexpr std::string_view prefix = "gitdir: ";
  if (!text.starts_with(prefix)) return {};
  text.remove_prefix(prefix.size());
  const auto end = text.find_first_of("\r\n");
  if (end != std::string_view::npos) {
    // One line only: anything after it is not what git writes.
    if (text.find_first_not_of("\r\n", end) != std::string_view::npos) return {};
    text = text.substr(0, end);
  }
  if (text.empty() || text.find('\0') != std::string_view::npos) return {};
  const fs::path p(text);
  return (p.is_absolute() ? p : fs::path(tree) / p).lexically_normal().string();
}

commit_decision decide_commit(const head_state& h, const std::string& branch) {
  const auto ours = "refs/heads/" + branch;
  const auto at = [](const std::string& c) { return c.substr(0, 12); };
  if (!h.ref.empty()) {
    if (h.ref != ours) return {commit_plan::keep, "HEAD is on " + h.ref + ", not on its branch " + branch};
    if (h.branch_tip.empty()) return {commit_plan::keep, "its branch " + branch + " has no commit (deleted?)"};
    if (!h.tip_has_base)
      return {commit_plan::on_branch, branch + " no longer contains the run's base commit (the step moved it back)"};
    return {commit_plan::on_branch, {}};
  }
  if (h.commit.empty()) return {commit_plan::keep, "HEAD names no commit"};
  if (h.branch_tip.empty()) return {commit_plan::keep, "HEAD is detached at " + at(h.commit) + " and " + branch + " is gone"};
  if (!h.descends)
    return {commit_plan::keep, "HEAD is detached at " + at(h.commit) + ", which does not descend from " + branch +
                                   " (at " + at(h.branch_tip) + ")"};
  return {commit_plan::fast_forward, "HEAD was detached at " + at(h.commit) + ", ahead of " + branch};
}

boost::asio::awaitable<std::variant<worktree_registration, std::string>> find_registration(std::string repo,
                                                                                          std::string root,
                                                                                          std::string branch,
                                                                                          std::string base) {
  worktree_registration r;
  r.root = root;
  r.real_root = real(root);
  r.branch = std::move(branch);
  r.base = std::move(base);
  auto common = co_await run(git_spec(words("git", "-C", repo, "rev-parse", "--path-format=absolute", "--git-common-dir")));
  r.common = common.ok ? real(common.out) : std::string();
  const auto text = read_small_file(r.real_root + "/.git");
  const auto named = text ? gitdir_of(*text, r.real_root) : std::string();
  r.admin = named.empty() ? std::string() : real(named);
  // Just made by `git worktree add`, before the step runs: its `.git` file names the
  // registration, which must be one of the checkout's and name the tree back.
  if (r.real_root.empty() || r.common.empty() || r.admin.empty() ||
      fs::path(r.admin).parent_path() != fs::path(r.common) / "worktrees" || !tree_changed(r).empty())
    co_return "worktree: git's registration of " + root + " cannot be found in " + repo;
  co_return r;
}

boost::asio::awaitable<worktree_commit> commit_worktree(worktree_registration r, std::string message) {
  worktree_commit done;
  auto changed = tree_changed(r);
  if (changed.empty()) changed = co_await git_sees_other(r);
  if (!changed.empty()) {
    done.keep = true;
    done.warnings.push_back(kept(r, changed));
    co_return done;
  }
  const auto head = co_await read_head(r);
  const auto decision = decide_commit(head, r.branch);
  if (decision.plan == commit_plan::keep) {
    done.keep = true;
    done.warnings.push_back(kept(r, decision.why));
    co_return done;
  }
  std::string failed;
  if (decision.plan == commit_plan::fast_forward) failed = co_await fast_forward(r, head, message);
  else failed = co_await commit_leftovers(r, message);
  if (!failed.empty()) {
    done.keep = true;
    done.warnings.push_back("worktree kept at " + r.root + ": " + failed);
    co_return done;
  }
  if (decision.plan == commit_plan::fast_forward)
    done.warnings.push_back(decision.why + ": " + r.branch + " moved to it (a fast-forward), with what was left uncommitted");
  else if (!decision.why.empty())
    done.warnings.push_back(decision.why + "; what was left uncommitted is committed on it all the same");
  co_return done;
}

}  // namespace arun::io
