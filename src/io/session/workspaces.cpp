#include "session/workspaces.hpp"

#include "executor/step_environment.hpp"
#include "files/json_text.hpp"
#include "files/owned_tree.hpp"
#include "files/private_files.hpp"
#include "process/supervisor.hpp"
#include "session/git_outcome.hpp"
#include "session/instance_logs.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace arun::io {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// Why the directory that holds a tree (`worktrees/…` or `copies/…` below the session) is not
// one arun made: a component that is a symlink or not the user's would lead the `rm -rf`,
// `cp -a` and `git worktree add` that work by path out of the session (docs/security.md,
// "Paths arun deletes or follows"). "" when it is.
std::string tree_parent_problem(const std::string& session_dir, const std::string& root) {
  auto opened = owned_dir::open(session_dir);
  if (auto* error = std::get_if<std::string>(&opened)) return *error;
  const auto parent = fs::path(root).parent_path().lexically_relative(session_dir).string();
  auto below = std::get<owned_dir>(opened).open_below(parent);
  if (auto* error = std::get_if<std::string>(&below)) return *error;
  return {};
}

constexpr auto git_timeout = std::chrono::minutes(5);


// `rm`, `cp`: long-running file work as supervised children.
process_spec command_spec(std::vector<std::string> argv) {
  process_spec spec;
  spec.launch.argv = std::move(argv);
  spec.launch.env = current_environment();
  spec.kill_grace = std::chrono::seconds(2);
  spec.label = spec.launch.argv.front();
  return spec;
}

process_spec git_spec(const std::string& dir, std::vector<std::string> args) {
  process_spec spec;
  spec.launch.argv = {"git", "-C", dir};
  spec.launch.argv.insert(spec.launch.argv.end(), args.begin(), args.end());
  auto env = current_environment();
  env.push_back("GIT_TERMINAL_PROMPT=0");
  spec.launch.env = std::move(env);
  spec.timeout = git_timeout;
  spec.kill_grace = std::chrono::seconds(2);
  spec.label = "git";
  return spec;
}


boost::asio::awaitable<git_outcome> git(const std::string& dir, std::vector<std::string> args) {
  co_return git_outcome_of(co_await run_process(git_spec(dir, std::move(args))));
}

// For the commands that run outside the engine's loop (sessions clean, a resume's start).
git_outcome git_now(const std::string& dir, std::vector<std::string> args) {
  boost::asio::io_context ctx;
  auto done = boost::asio::co_spawn(ctx, run_process(git_spec(dir, std::move(args))), boost::asio::use_future);
  ctx.run();
  return git_outcome_of(done.get());
}

// `fan[3]/review` -> `fan[3]/review`, safe as a path below the session (as its logs are).
std::string tree_path(const std::string& instance) {
  auto p = instance_log_path(instance, output_stream::out);
  return p.substr(0, p.size() - 4);  // ".out"
}

std::string index_file(const std::string& session_dir) { return session_dir + "/workspaces.json"; }

}  // namespace

std::string instance_branch(const std::string& session_id, const std::string& instance) {
  // One to one, so no two instances ever share a branch: an index becomes a component
  // (`fan[3]/review` -> `fan/3/review`), letters, digits, '_' and '-' stay, and any other
  // byte is written %XX ('.' too: no `..`, no `.lock`, no component starting with a dot).
  std::string name;
  for (const char c : instance) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (plain || c == '/') name += c;
    else if (c == '[') name += '/';
    else if (c == ']') continue;
    else name += fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
  return "arun/" + session_id + "/" + (name.empty() ? std::string("step") : name);
}

session_workspaces::session_workspaces(std::string session_dir, std::string session_id, std::string base_dir,
                                       bool keep_all)
    : session_dir_(std::move(session_dir)), session_id_(std::move(session_id)), base_dir_(std::move(base_dir)),
      keep_all_(keep_all) {
  // A resume goes on from the same base commits, and knows the trees kept before.
  std::ifstream in(index_file(session_dir_));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  boost::system::error_code ec;
  const auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return;
  if (const auto* bases = v.as_object().if_contains("bases"); bases && bases->is_object())
    for (const auto& [repo, commit] : bases->get_object())
      if (commit.is_string()) bases_[std::string(repo)] = std::string(commit.get_string());
  if (const auto* trees = v.as_object().if_contains("trees"); trees && trees->is_object())
    for (const auto& entry : trees->get_object()) {
      if (!entry.value().is_object()) continue;
      const auto& t = entry.value().get_object();
      auto text_of = [&t](const char* k) {
        const auto* x = t.if_contains(k);
        return x && x->is_string() ? std::string(x->get_string()) : std::string();
      };
      const auto* kept = t.if_contains("kept");
      trees_[std::string(entry.key())] = {text_of("kind"), text_of("root"), text_of("repo"), text_of("branch"),
                                          kept && kept->is_bool() && kept->get_bool()};
    }
}

std::string session_workspaces::save_index() const {
  json::object bases, trees;
  for (const auto& [repo, commit] : bases_) bases[repo] = commit;
  for (const auto& [instance, t] : trees_) {
    trees[instance] = json::object{{"kind", t.kind}, {"root", t.root}, {"repo", t.repo}, {"branch", t.branch}};
    if (t.kept) trees[instance].as_object()["kept"] = true;
  }
  const json::object doc{{"bases", std::move(bases)}, {"trees", std::move(trees)}};
  return replace_private_file(index_file(session_dir_), to_json_text(doc) + "\n") ? std::string()
                                                                                  : "cannot write " + index_file(session_dir_);
}

void session_workspaces::remember(const std::string& instance, const std::string& kind, const std::string& root,
                                  const std::string& repo, const std::string& branch) {
  trees_[instance] = {kind, root, repo, branch};
  (void)save_index();  // a lost index only leaves a tree for `git worktree prune` to find
}

void session_workspaces::forget(const std::string& instance) {
  trees_.erase(instance);
  (void)save_index();
}

boost::asio::awaitable<std::variant<workspace, std::string>> session_workspaces::make(isolation_kind kind,
                                                                                      std::string instance,
                                                                                      std::string working_dir) {
  std::error_code ec;
  const auto dir = fs::absolute(fs::path(base_dir_) / working_dir, ec).lexically_normal().string();
  if (kind == isolation_kind::copy) co_return co_await make_copy(instance, dir);
  co_return co_await make_worktree(instance, dir);
}

boost::asio::awaitable<std::variant<workspace, std::string>> session_workspaces::make_worktree(const std::string& instance,
                                                                                               const std::string& dir) {
  auto top = co_await git(dir, words("rev-parse", "--show-toplevel"));
  if (!top.ok)
    co_return "worktree: " + dir + " is not in a git checkout (" + top.why + "); isolation: copy works without git";
  const std::string repo = top.out;
  // Where the step runs inside the checkout, as git sees it (a path through a symlink too).
  auto prefix = co_await git(dir, words("rev-parse", "--show-prefix"));
  const std::string inside = prefix.ok ? prefix.out : std::string();
  std::error_code ec;
  if (!bases_.contains(repo)) {
    auto head = co_await git(repo, words("rev-parse", "--verify", "HEAD^{commit}"));
    if (!head.ok) co_return "worktree: " + repo + " has no commit to start from (" + head.why + ")";
    bases_[repo] = head.out;
  }
  const auto root = session_dir_ + "/worktrees/" + tree_path(instance);
  const auto branch = instance_branch(session_id_, instance);
  // Listed before it exists: a crash during `git worktree add` leaves a tree that resume and
  // `sessions clean` know to unregister.
  remember(instance, "worktree", root, repo, branch);
  // git's worktree administration is not safe to run twice at once in one checkout.
  auto hold = co_await lock(repo);
  // An earlier attempt's tree (a retry, a resume) goes first: each attempt starts afresh.
  // Forced twice: a tree whose `git worktree add` was killed half-way is locked.
  const auto own = "worktrees/" + tree_path(instance);
  if (auto opened = owned_dir::open(session_dir_); auto* session = std::get_if<owned_dir>(&opened)) {
    // git is asked to remove only a real directory below the session: git resolves the path
    // it is given, so a link in the tree's place (planted, or made by a step) would have it
    // remove, forced, the worktree the link leads to, with its uncommitted work.
    if (std::holds_alternative<owned_dir>(session->open_below(own))) {
      auto removed = co_await git(repo, words("worktree", "remove", "--force", "--force", root));
      (void)removed;  // a tree git no longer knows is removed below all the same
    }
    // Through the session's descriptor: nothing on the way is followed out of it.
    (void)session->remove(own);
  }
  make_private_directories(fs::path(root).parent_path().string(), ec);
  if (auto problem = tree_parent_problem(session_dir_, root); !problem.empty())
    co_return "worktree: refused to make " + root + ": " + problem;
  // --force: this instance's own registration may outlive its directory (a crash).
  auto added =
      co_await git(repo, words("worktree", "add", "--force", "--quiet", "-B", branch, root, bases_.at(repo)));
  if (!added.ok) co_return "worktree: git worktree add " + root + " failed: " + added.why;
  // The registration git just made, read before the step runs: the commit after it is pinned
  // to it, whatever the step does to the tree's `.git` (docs/isolation.md).
  auto found = co_await find_registration(repo, root, branch, bases_.at(repo));
  if (auto* error = std::get_if<std::string>(&found)) co_return *error;
  registrations_[instance] = std::move(std::get<worktree_registration>(found));
  workspace w;
  w.root = root;
  w.dir = inside.empty() ? root : root + "/" + inside;
  while (w.dir.size() > root.size() && w.dir.back() == '/') w.dir.pop_back();
  w.branch = branch;
  co_return w;
}

boost::asio::awaitable<session_workspaces::repo_hold> session_workspaces::lock(const std::string& repo) {
  auto& l = locks_[repo];
  while (l.busy) {
    auto wake = std::make_shared<boost::asio::steady_timer>(co_await boost::asio::this_coro::executor,
                                                             boost::asio::steady_timer::time_point::max());
    l.waiters.push_back(wake);
    auto ignored = co_await wake->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    (void)ignored;
  }
  l.busy = true;
  co_return repo_hold(this, repo);
}

void session_workspaces::unlock(const std::string& repo) noexcept {
  auto& l = locks_[repo];
  l.busy = false;
  // Every waiter wakes and checks again; one takes the lock. Waking one alone could wake a
  // waiter that a stopped run has already abandoned, and leave the others waiting for good.
  for (auto& waiter : l.waiters) waiter->cancel();
  l.waiters.clear();
}

boost::asio::awaitable<std::variant<workspace, std::string>> session_workspaces::make_copy(const std::string& instance,
                                                                                           const std::string& given) {
  const auto root = session_dir_ + "/copies/" + tree_path(instance);
  std::error_code ec;
  if (!fs::is_directory(given, ec)) co_return "copy: the working directory " + given + " does not exist";
  // A session below the directory copied would copy itself (compared as real paths).
  const auto dir = fs::weakly_canonical(given, ec).string();
  const auto session = fs::weakly_canonical(session_dir_, ec).string();
  const auto rel = fs::path(session).lexically_relative(dir).string();
  if (!rel.empty() && rel != ".." && !rel.starts_with("../"))
    co_return "copy: the session directory " + session + " is inside " + dir + ", which would copy itself";
  remember(instance, "copy", root, {}, {});
  make_private_directories(fs::path(root).parent_path().string(), ec);
  if (auto problem = tree_parent_problem(session_dir_, root); !problem.empty())
    co_return "copy: refused to make " + root + ": " + problem;
  // By `rm` and `cp` as children: a large tree never holds up the run's loop (a Ctrl-C, the
  // other steps).
  auto cleared = co_await run_process(command_spec(words("rm", "-rf", "--", root)));
  (void)cleared;
  auto copied = co_await run_process(command_spec(words("cp", "-a", "--", dir, root)));
  if (!copied.succeeded()) {
    auto why = git_outcome_of(copied).why;
    auto removed = co_await run_process(command_spec(words("rm", "-rf", "--", root)));
    (void)removed;
    co_return "copy: cannot copy " + dir + " to " + root + ": " + why;
  }
  co_return workspace{root, root, {}};
}

boost::asio::awaitable<std::vector<std::string>> session_workspaces::finish(isolation_kind kind, workspace w,
                                                                            std::string instance, bool succeeded) {
  std::vector<std::string> warnings;
  if (!succeeded) co_return warnings;  // kept for inspection; listed in the index
  if (kind == isolation_kind::worktree) {
    // What the step left uncommitted goes on its branch, so removing the tree loses nothing:
    // only in the tree arun registered, on its branch; anything else keeps the tree.
    const auto reg = registrations_.find(instance);
    if (reg == registrations_.end()) {
      warnings.push_back("worktree kept at " + w.root + ", nothing committed: its registration is unknown");
      co_return warnings;
    }
    auto done = co_await commit_worktree(reg->second, "arun: " + instance + " (session " + session_id_ + ")");
    warnings = std::move(done.warnings);
    if (done.keep) {
      if (auto t = trees_.find(instance); t != trees_.end()) t->second.kept = true;
      (void)save_index();
      co_return warnings;
    }
    if (keep_all_) co_return warnings;
    const auto repo = trees_.contains(instance) ? trees_.at(instance).repo : std::string();
    const auto checkout = repo.empty() ? w.root : repo;
    auto hold = co_await lock(checkout);
    auto removed = co_await git(checkout, words("worktree", "remove", "--force", "--force", w.root));
    if (!removed.ok) {
      warnings.push_back("worktree " + w.root + " could not be removed: " + removed.why);
      co_return warnings;
    }
    forget(instance);
    co_return warnings;
  }
  if (keep_all_) co_return warnings;
  if (auto problem = tree_parent_problem(session_dir_, w.root); !problem.empty()) {
    warnings.push_back("copy " + w.root + " left alone: " + problem);
    co_return warnings;
  }
  auto removed = co_await run_process(command_spec(words("rm", "-rf", "--", w.root)));
  if (!removed.succeeded()) warnings.push_back("copy " + w.root + " could not be removed: " + git_outcome_of(removed).why);
  else forget(instance);
  co_return warnings;
}

namespace {

// The largest workspaces.json a removal reads: far beyond any real index.
constexpr std::size_t max_index_bytes = 16 << 20;

// Where arun makes the tree of `instance` (worktrees/… or copies/… below the session): the
// only place a removal goes, whatever workspaces.json says (docs/security.md, "Paths arun
// deletes or follows"). Empty for a kind arun does not make.
std::string own_tree(std::string_view kind, const std::string& instance) {
  if (kind == "worktree") return "worktrees/" + tree_path(instance);
  if (kind == "copy") return "copies/" + tree_path(instance);
  return {};
}

// Whether the index's `root` is that place: by the session's path as given or its real path.
bool names_own_tree(const std::string& session_dir, const std::string& own, const std::string& root) {
  if (fs::path(root).lexically_normal() == (fs::path(session_dir) / own).lexically_normal()) return true;
  std::string why;
  const auto rel = path_below(session_dir, root, why);
  return rel && *rel == own;
}

// This session's registrations in `checkout` whose directories are gone (a crash mid-add, or
// a tree removed above): only those — a blanket `git worktree prune` would also drop the
// user's own worktrees on a disk that is not mounted now. Each goes through the checkout's
// `worktrees/` descriptor, never through a path the index or a `gitdir` file names.
void unregister_gone(const std::string& checkout, const std::vector<std::string>& ours,
                     std::vector<std::string>& problems) {
  std::error_code exists_ec;
  if (!fs::exists(checkout, exists_ec)) return;
  const auto common = git_now(checkout, {"rev-parse", "--path-format=absolute", "--git-common-dir"});
  if (!common.ok) return;
  auto admin = owned_dir::open(common.out + "/worktrees");
  auto* dir = std::get_if<owned_dir>(&admin);
  if (!dir) return;  // no worktrees registered at all (or not the user's: left alone)
  std::error_code list_ec;
  for (const auto& entry : fs::directory_iterator(common.out + "/worktrees", list_ec)) {
    const auto name = entry.path().filename().string();
    std::string why;
    const auto text = dir->read_file(name + "/gitdir", 64 * 1024, why);
    if (!text) continue;
    const auto gitdir = text->substr(0, text->find('\n'));  // WORKTREE/.git
    const bool mine = std::any_of(ours.begin(), ours.end(), [&](const std::string& p) { return gitdir.starts_with(p); });
    std::error_code gone_ec;
    if (!mine || fs::exists(fs::symlink_status(gitdir, gone_ec))) continue;
    if (auto problem = dir->remove(name); !problem.empty()) problems.push_back("cannot unregister a worktree: " + problem);
  }
}

}  // namespace

std::vector<std::string> remove_session_workspaces(const std::string& session_dir,
                                                   const std::function<bool(std::string_view instance)>& keep) {
  std::vector<std::string> problems;
  auto opened = owned_dir::open(session_dir);
  if (auto* error = std::get_if<std::string>(&opened)) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(session_dir, ec))) problems.push_back("left its trees alone: " + *error);
    return problems;
  }
  const auto& session = std::get<owned_dir>(opened);
  std::string why;
  const auto text = session.read_file("workspaces.json", max_index_bytes, why);
  if (!text) {
    if (session.has("workspaces.json")) problems.push_back("cannot read the tree index: " + why);
    return problems;
  }
  boost::system::error_code ec;
  auto v = json::parse(*text, ec);
  if (ec || !v.is_object()) return {"cannot read " + index_file(session_dir)};
  auto* trees = v.as_object().if_contains("trees");
  if (!trees || !trees->is_object()) return problems;
  std::set<std::string, std::less<>> repos;
  json::object kept;
  for (const auto& [instance, t] : trees->get_object()) {
    if (!t.is_object()) continue;
    const auto* kept_after_success = t.get_object().if_contains("kept");
    if (keep && (keep(std::string_view(instance)) || (kept_after_success && *kept_after_success == true))) {
      kept[instance] = t;
      continue;
    }
    const auto& tree = t;  // clang 14 captures no structured binding
    auto field = [&tree](const char* k) {
      const auto* x = tree.get_object().if_contains(k);
      return x && x->is_string() ? std::string(x->get_string()) : std::string();
    };
    const auto own = own_tree(field("kind"), std::string(instance));
    const auto root = field("root");
    // The index is data: a root anywhere but where arun makes this instance's tree is refused.
    if (own.empty() || !names_own_tree(session_dir, own, root)) {
      problems.push_back("left " + (root.empty() ? std::string("a tree") : root) + " alone: " + index_file(session_dir) +
                         " lists it for " + std::string(instance) + ", but arun makes that tree only at " +
                         session_dir + "/" + (own.empty() ? "worktrees/..." : own));
      continue;
    }
    if (const auto repo = field("repo"); !repo.empty()) repos.insert(repo);
    if (auto problem = session.remove(own); !problem.empty()) problems.push_back(problem);
  }
  // Registrations whose directories are gone: those of this session's worktrees/ only.
  if (const auto* bases = v.as_object().if_contains("bases"); bases && bases->is_object())
    for (const auto& b : bases->get_object()) repos.insert(std::string(b.key()));
  std::error_code canon_ec;
  const std::vector<std::string> ours{
      fs::weakly_canonical(fs::path(session_dir) / "worktrees", canon_ec).string() + "/",
      (fs::path(session_dir) / "worktrees").lexically_normal().string() + "/"};
  for (const auto& checkout : repos) unregister_gone(checkout, ours, problems);
  v.as_object()["trees"] = std::move(kept);
  if (!replace_private_file(index_file(session_dir), to_json_text(v) + "\n"))
    problems.push_back("cannot write " + index_file(session_dir));
  return problems;
}

std::vector<std::string> kept_session_trees(const std::string& session_dir) {
  std::vector<std::string> out;
  auto opened = owned_dir::open(session_dir);
  const auto* session = std::get_if<owned_dir>(&opened);
  if (!session) return out;
  std::string why;
  const auto text = session->read_file("workspaces.json", max_index_bytes, why);
  if (!text) return out;
  boost::system::error_code ec;
  const auto v = json::parse(*text, ec);
  const auto* trees = !ec && v.is_object() ? v.get_object().if_contains("trees") : nullptr;
  if (!trees || !trees->is_object()) return out;
  for (const auto& [instance, t] : trees->get_object()) {
    const auto* kind = t.is_object() ? t.get_object().if_contains("kind") : nullptr;
    const auto own = kind && kind->is_string() ? own_tree(kind->get_string(), std::string(instance)) : std::string();
    if (!own.empty() && session->has(own)) out.push_back(session_dir + "/" + own);
  }
  return out;
}

}  // namespace arun::io
