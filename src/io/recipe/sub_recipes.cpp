#include "recipe/sub_recipes.hpp"

#include "recipe/recipe_chain.hpp"

#include <arun/validation.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace arun::io {
namespace fs = std::filesystem;

std::string resolve_sub_recipe(const std::string& reference, const std::string& caller_file,
                               const discovery_options& discovery, const std::vector<std::string>& roots,
                               std::string& error, recipe_sources* sources) {
  const auto caller_dir = fs::absolute(caller_file).parent_path().string();
  if (is_path_reference(reference) && sources) {
    // Resume: the session's copy stands in for a file removed since the run started.
    std::error_code ec;
    const auto candidate = fs::weakly_canonical(fs::path(caller_dir) / reference, ec).string();
    if (!ec && !fs::exists(candidate, ec) && sources->saved(candidate)) return candidate;
  }
  if (is_path_reference(reference)) {
    auto path = resolve_inside(reference, caller_dir, roots, error);
    return path.value_or(std::string());
  }
  if (auto why = invalid_name_reason(reference); !why.empty()) {
    error = "sub-recipe '" + reference + "': " + why;
    return {};
  }
  auto found = find_recipe(reference, discovery, caller_dir);
  if (found.path.empty()) {
    std::string dirs;
    for (const auto& d : found.looked_in) dirs += (dirs.empty() ? "" : ", ") + d;
    error = "sub-recipe '" + reference + "' not found (looked for " + reference + ".yaml and " + reference +
            ".yml in " + (dirs.empty() ? std::string("no directory") : dirs) + ")";
    return {};
  }
  // Found by name, it is held to the rule a path is held to: a symlink in a search directory
  // must not lead outside it and the recipe's roots.
  auto allowed = roots;
  allowed.push_back(found.looked_in.back());
  std::string outside;
  if (auto inside = resolve_inside(found.path, caller_dir, allowed, outside)) return *inside;
  error = "sub-recipe '" + reference + "': " + outside + ", and the directory it was found in";
  return {};
}

namespace {

using name_set = std::set<std::string, std::less<>>;

// One `recipe:` step with a fixed reference, and the recipe it loads.
struct call_edge {
  const step* via = nullptr;
  std::size_t child = 0;         // index into the tree's recipes
  const step* loop = nullptr;    // the innermost loop around `via` (or `via` itself) that runs items side by side
};

bool runs_side_by_side(const step& s) { return s.foreach && s.foreach->max_concurrent != 1; }

// Every step of `steps` and their bodies, with the innermost loop (the step itself included)
// that runs several items at once.
void walk_with_loop(const std::vector<step>& steps, const step* loop,
                    const std::function<void(const step&, const step* loop)>& visit) {
  for (const auto& s : steps) {
    const auto* around = runs_side_by_side(s) ? &s : loop;
    visit(s, around);
    walk_with_loop(s.steps, around, visit);
  }
}

// Every recipe reachable from the top, each file once, with its calls.
struct call_tree {
  const recipe* top = nullptr;  // recipe 0, not copied: a recipe of 20,000 steps is 25 MiB
  std::deque<recipe> loaded;    // recipes 1, 2, ...; a deque: steps stay put while it grows
  const recipe& operator[](std::size_t i) const { return i == 0 ? *top : loaded[i - 1]; }
  std::size_t size() const noexcept { return loaded.size() + 1; }
  std::vector<std::vector<call_edge>> calls;
  std::vector<bool> dynamic;  // has a `recipe:` chosen at run time
};

// What a recipe's callees declare (docs/reference/templates.md, "Undefined references": their
// outputs come back to it), transitively.
const name_set& declared_below(const call_tree& tree, std::size_t at, std::vector<std::optional<name_set>>& memo,
                               std::vector<bool>& visiting) {
  if (memo[at]) return *memo[at];
  name_set names;
  visiting[at] = true;
  for (const auto& call : tree.calls[at]) {
    if (visiting[call.child]) continue;  // recursion: the names are already being gathered
    const auto own = declared_names(tree[call.child]);
    names.insert(own.begin(), own.end());
    const auto& deeper = declared_below(tree, call.child, memo, visiting);
    names.insert(deeper.begin(), deeper.end());
  }
  visiting[at] = false;
  memo[at] = std::move(names);
  return *memo[at];
}

// Validates every recipe the top calls, once per call, against what that call passes it: the
// caller's names (its own, its callees' and what its caller passed), the step's `context:`
// overrides and --set keys. Errors name the call chain; each is reported once.
void check_call_tree(const call_tree& tree, const validation_options& top, std::vector<diagnostic>& out) {
  const auto n = tree.size();
  std::vector<std::optional<name_set>> memo(n);
  std::vector<bool> visiting(n, false);
  // A `recipe:` chosen at run time anywhere may produce names no one can see now: undeclared
  // names then only warn, as in the top recipe.
  const bool dynamic = std::find(tree.dynamic.begin(), tree.dynamic.end(), true) != tree.dynamic.end();
  struct pending {
    std::size_t at;
    name_set inherited;
    std::string chain;
    bool lenient;  // lenient_templates up the chain: the child renders in lenient mode too
  };
  std::vector<pending> work{{0, {}, tree[0].name, top.lenient || tree[0].lenient_templates}};
  std::set<std::pair<std::size_t, const step*>> seen_calls;
  std::set<std::string> reported;
  while (!work.empty()) {
    auto [at, inherited, chain, lenient] = std::move(work.back());
    work.pop_back();
    const auto& caller = tree[at];
    name_set caller_names = inherited;
    for (const auto& names : {declared_names(caller, top), declared_below(tree, at, memo, visiting)})
      caller_names.insert(names.begin(), names.end());
    for (const auto& call : tree.calls[at]) {
      if (!seen_calls.emplace(at, call.via).second) continue;
      const auto& callee = tree[call.child];
      name_set passed = caller_names;
      for (const auto& kv : call.via->call.context) passed.emplace(kv.key());
      validation_options vo = top;
      vo.sub_recipe_names = passed;
      const auto& below = declared_below(tree, call.child, memo, visiting);
      vo.sub_recipe_names.insert(below.begin(), below.end());
      vo.dynamic_sub_recipes = dynamic;
      vo.lenient = lenient;
      const auto callee_chain = chain + " step '" + call.via->id + "' -> " + callee.name;
      for (auto& d : validate_recipe(callee, vo)) {
        if (d.level != severity::error || !reported.insert(format_diagnostic(d)).second) continue;
        d.message += " (sub-recipe called as " + callee_chain + ")";
        out.push_back(std::move(d));
      }
      work.push_back({call.child, std::move(passed), callee_chain, lenient || callee.lenient_templates});
    }
  }
}

// Whether the recipe at `at` or one it calls (transitively) asks an approval: a stage's gate,
// a gate step or a step with requires_approval.
bool asks_approval(const call_tree& tree, std::size_t at, std::vector<bool>& visited) {
  if (visited[at]) return false;
  visited[at] = true;
  const auto& r = tree[at];
  bool asks = std::any_of(r.stages.begin(), r.stages.end(), [](const stage& st) { return st.approval.required; });
  for_each_step(r, [&](const step& s, int) { asks = asks || s.approval.required || s.type == step_type::gate; });
  for (const auto& call : tree.calls[at]) asks = asks || asks_approval(tree, call.child, visited);
  return asks;
}

// Checks of how the recipes of the tree are called, beyond each one's own validation.
//  - A loop that runs a sub-recipe with approval gates for several items at once asks each
//    item's gates (docs/sessions.md, "Approvals"); the Python dialect warns that this is
//    undefined there, and arun says what it does instead.
//  - A sub-recipe's own `limits:` count only when it runs as the top-level recipe
//    (docs/reference/recipe.md, limits): once per file, where the limits are written.
void check_calls(const call_tree& tree, std::vector<diagnostic>& out) {
  std::set<std::size_t> limits_reported;
  std::set<std::pair<const step*, std::size_t>> gates_reported;  // (loop, callee): once each
  for (std::size_t at = 0; at < tree.size(); ++at)
    for (const auto& call : tree.calls[at]) {
      const auto& callee = tree[call.child];
      if (!callee.limits.empty() && call.child != 0 && limits_reported.insert(call.child).second) {
        diagnostic d;
        d.level = severity::warning;
        d.where = callee.limits_where;
        d.message = "the 'limits' of " + callee.name + " count only when it runs on its own: called from " +
                    tree[0].name + ", the top-level recipe's limits apply";
        d.key = "limits";
        d.hint = "move these limits to " + tree[0].name + ", or put the steps under a limit_group it limits";
        d.code = "ineffective-field";
        out.push_back(std::move(d));
      }
      const auto* loop = call.loop;
      if (!loop || !gates_reported.emplace(loop, call.child).second) continue;
      std::vector<bool> visited(tree.size(), false);
      if (!asks_approval(tree, call.child, visited)) continue;
      diagnostic d;
      d.level = severity::warning;
      d.where = loop->at(loop->has("parallel") ? "parallel" : "max_concurrent");
      d.message = "loop '" + loop->id + "' runs " + callee.name +
                  ", which asks for approval (itself or in a recipe it calls), for several items at once: each "
                  "item asks its own gates (one "
                  "question at a time on a terminal; without one, the run stops at every item's gate)";
      d.key = "parallel";
      d.hint = "to ask once for the whole loop, put a gate step before it; to decide the items' gates together, "
               "arun approve ID --step '" + loop->id + "[*]/...' (the Python runner leaves parallel gates undefined)";
      d.code = "approval";
      out.push_back(std::move(d));
    }
}

}  // namespace

sub_recipe_cache::sub_recipe_cache(const recipe& top, discovery_options discovery, load_limits limits)
    : discovery_(std::move(discovery)), limits_(limits), roots_(recipe_roots(top.source_path, discovery_)) {}

const recipe* sub_recipe_cache::find(const recipe& caller, const step& call) {
  if (call.type != step_type::recipe || call.call.recipe.find("{{") != std::string::npos) return nullptr;
  std::string error;
  const auto path = resolve_sub_recipe(call.call.recipe, caller.source_path, discovery_, roots_, error, limits_.sources);
  if (path.empty()) return nullptr;
  std::error_code ec;
  const auto key = fs::weakly_canonical(path, ec);
  auto [it, fresh] = by_path_.try_emplace(ec ? path : key.string());
  if (fresh)
    if (auto loaded = load_recipe_chain(path, discovery_, limits_); loaded.value)
      it->second = std::make_unique<recipe>(std::move(*loaded.value));
  return it->second.get();
}

sub_recipe_scan scan_sub_recipes(const recipe& top, const discovery_options& discovery, const load_limits& limits,
                                 const validation_options* check) {
  sub_recipe_scan scan;
  const auto roots = recipe_roots(top.source_path, discovery);
  call_tree tree;
  tree.top = &top;
  std::map<std::string, std::size_t> by_path;
  for (std::size_t at = 0; at < tree.size(); ++at) {
    tree.calls.emplace_back();
    tree.dynamic.push_back(false);
    std::vector<call_edge> calls;
    bool dynamic = false;
    const auto visit = [&](const step& s, const step* loop) {
      if (s.type != step_type::recipe) return;
      if (s.call.recipe.find("{{") != std::string::npos) {
        dynamic = true;
        return;
      }
      std::string error;
      const auto& caller = tree[at];
      const auto path = resolve_sub_recipe(s.call.recipe, caller.source_path, discovery, roots, error, limits.sources);
      if (path.empty()) {
        diagnostic d;
        d.where = s.at("recipe");
        d.message = error + " (step '" + s.id + "')";
        d.key = "recipe";
        d.code = "sub-recipe";
        scan.diagnostics.push_back(std::move(d));
        return;
      }
      const auto key = fs::weakly_canonical(path).string();
      if (auto known = by_path.find(key); known != by_path.end()) {
        calls.push_back({&s, known->second, loop});
        return;
      }
      auto child = load_recipe_chain(path, discovery, limits);
      if (!child.value) {
        diagnostic d;
        d.where = s.at("recipe");
        d.message = "sub-recipe " + path + " of step '" + s.id + "' does not load (arun validate " + path + ")";
        d.key = "recipe";
        d.code = "sub-recipe";
        scan.diagnostics.push_back(std::move(d));
        return;
      }
      by_path.emplace(key, tree.size());
      calls.push_back({&s, tree.size(), loop});
      tree.loaded.push_back(std::move(*child.value));
    };
    walk_with_loop(tree[at].steps, nullptr, visit);
    for (const auto& st : tree[at].stages) walk_with_loop(st.steps, nullptr, visit);
    tree.calls[at] = std::move(calls);
    tree.dynamic[at] = dynamic;
  }
  scan.dynamic_calls = std::find(tree.dynamic.begin(), tree.dynamic.end(), true) != tree.dynamic.end();
  for (std::size_t i = 1; i < tree.size(); ++i) {
    const auto names = declared_names(tree[i]);
    scan.declared.insert(names.begin(), names.end());
  }
  if (check) {
    check_call_tree(tree, *check, scan.diagnostics);
    check_calls(tree, scan.diagnostics);
  }
  for (auto& child : tree.loaded) scan.children.push_back(std::move(child));
  return scan;
}

}  // namespace arun::io
