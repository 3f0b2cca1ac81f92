// Isolated leaves (a step's `isolation:`): each instance runs in a tree of its own — a git
// worktree on its own branch, or a copy of its working directory — that the host makes before
// the step's templates render (they may name {{step.worktree}} and {{step.branch}}) and
// finishes after the instance's last call: committed and removed after a success, kept after
// a failure. Agents fanned out over one checkout then never write over each other.
#include "scheduler/step_executor.hpp"

namespace arun::engine {

boost::asio::awaitable<step_executor::isolated> step_executor::isolate(const step& s, scope sc, const std::string& instance,
                                                                             boost::json::object& builtins) {
  isolated out;
  if (s.isolation == isolation_kind::none) co_return out;
  if (!rs_.options.workspaces) {
    out.error = "isolation: this run keeps no session, and the trees of isolated steps live in one";
    co_return out;
  }
  // The working directory is rendered first: the tree is made for it, then the rest renders
  // with step.worktree and step.branch.
  std::string dir;
  if (!s.working_dir.empty()) {
    auto rendered = render_text(s.working_dir, view(sc, builtins));
    if (!rendered.ok()) {
      out.error = "working_dir: " + rendered.error;
      co_return out;
    }
    dir = std::move(rendered.text);
  }
  auto made = co_await rs_.options.workspaces->make(s.isolation, instance, dir);
  if (auto* error = std::get_if<std::string>(&made)) {
    out.error = "isolation: " + *error;
    co_return out;
  }
  out.ws = std::move(std::get<workspace>(made));
  auto& step_values = builtins["step"].as_object();
  step_values["worktree"] = out.ws->root;
  step_values["branch"] = out.ws->branch;
  co_return out;
}

boost::asio::awaitable<void> step_executor::release(const step& s, const std::string& instance, const workspace& ws,
                                                    instance_outcome& o) {
  const bool succeeded = o.result.status == step_status::completed || o.result.status == step_status::degraded;
  auto warnings = co_await rs_.options.workspaces->finish(s.isolation, ws, instance, succeeded);
  warn(s, instance, warnings);
  o.result.worktree = ws.root;
  o.result.branch = ws.branch;
  if (!succeeded && !o.result.error.empty())
    o.result.error += "\n" + std::string(s.isolation == isolation_kind::copy ? "copy" : "worktree") + " kept: " + ws.root;
}

}  // namespace arun::engine
