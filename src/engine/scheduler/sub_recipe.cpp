// Recipe steps (docs/reference/recipe.md, "Sub-recipe steps"): the child runs in a frame of its own
// (its hooks, its declared names, its instance prefix), on a copy of the parent's context; on
// success what it created or changed comes back as the step's updates.
#include "scheduler/step_executor.hpp"

#include "dag_order.hpp"

#include <arun/run_services.hpp>
#include <arun/validation.hpp>

namespace arun::engine {
namespace {

// `a -> b -> b -> b -> c` as `a -> b ×3 -> c`: a recipe calling itself 200 times deep
// names itself once.
std::string joined_chain(std::vector<std::string> chain, const std::string& next) {
  chain.push_back(next);
  std::string text;
  for (std::size_t i = 0; i < chain.size();) {
    auto j = i;
    while (j < chain.size() && chain[j] == chain[i]) ++j;
    text += (text.empty() ? "" : " -> ") + chain[i] + (j - i > 1 ? " \u00d7" + std::to_string(j - i) : "");
    i = j;
  }
  return text;
}

constexpr std::size_t max_causes = 5;

// The failures that made a sub-recipe fail, each named once at the depth where it happened:
// a failed nested sub-recipe step contributes its own causes, not its message, so the error
// of a deep recursion stays as long as its deepest failure and never repeats the levels above.
void collect_causes(const std::vector<step_result>& results, std::vector<std::string>& causes, std::size_t& more) {
  for (const auto& r : results) {
    if (r.status != step_status::failed && r.status != step_status::cancelled) continue;
    const auto found = causes.size() + more;
    if (!r.children.empty()) collect_causes(r.children, causes, more);
    if (causes.size() + more > found) continue;
    if (causes.size() < max_causes) {
      causes.push_back(r.error.empty() ? "step '" + r.step_id + "' " + (r.status == step_status::failed ? "failed" : "was cancelled")
                                       : r.error.substr(0, r.error.find('\n')));
    } else {
      ++more;
    }
  }
}

std::string failed_children(const std::vector<step_result>& results) {
  std::vector<std::string> causes;
  std::size_t more = 0;
  collect_causes(results, causes, more);
  std::string list;
  for (const auto& c : causes) list += (list.empty() ? "" : "; ") + c;
  if (more > 0) list += "; and " + std::to_string(more) + " more";
  return list;
}

}  // namespace

boost::asio::awaitable<instance_outcome> step_executor::run_recipe_call(const step& s, scope sc,
                                                                        const std::string& instance, int attempt,
                                                                        std::stop_token stop) {
  instance_outcome o;
  auto fail = [&](const std::string& why) {
    o.result = unstarted(instance, step_status::failed, "step '" + instance + "': " + why);
    o.next = failure_flow(s, rs_.options.keep_going);
    return std::move(o);
  };
  const auto builtins = step_builtins(s, instance);
  const auto rscope = view(sc, builtins);
  auto name = render_text(s.call.recipe, rscope);
  warn(s, instance, name.warnings);
  if (!name.ok()) co_return fail("recipe: " + name.error);
  if (!rs_.options.recipes) co_return fail("sub-recipes cannot be loaded by this host (no recipe source)");
  const auto loaded = rs_.options.recipes->load(name.text, frame_.r);
  if (!loaded.value) co_return fail(loaded.error);
  const recipe& child = *loaded.value;
  if (frame_.depth + 1 > frame_.max_depth)
    co_return fail("recursion depth limit " + std::to_string(frame_.max_depth) +
                   " reached: " + joined_chain(frame_.chain, child.name));

  // The child context: the parent's, then the child's defaults, then the step's overrides.
  boost::json::object context = visible_context(rscope);
  for (const auto& kv : child.context)
    if (!context.contains(kv.key())) context[kv.key()] = kv.value();
  auto overrides = render_value(s.call.context, rscope);
  warn(s, instance, overrides.warnings);
  if (!overrides.ok()) co_return fail("context: " + overrides.error);
  if (auto* fields = overrides.value.if_object())
    for (auto& kv : *fields) context[kv.key()] = std::move(kv.value());
  const boost::json::object initial = context;

  recipe_frame child_frame{child, declared_names(child), frame_.mode, frame_.builtins, instance + "/",
                           frame_.depth + 1, frame_.max_depth, frame_.chain};
  if (child.lenient_templates && child_frame.mode == undefined_mode::normal) child_frame.mode = undefined_mode::lenient;
  // What the caller hands over counts as declared in the child (docs/reference/recipe.md,
  // "Sub-recipe steps": the child starts from the caller's context and the step's overrides).
  for (const auto& kv : context) child_frame.declared.emplace(kv.key());
  // So does what the caller's tree declares but left unset (a skipped step's output): the
  // child renders it empty with a warning, as the caller itself would (docs/reference/templates.md,
  // "Undefined references").
  for (const auto& declared : frame_.declared) child_frame.declared.insert(declared);
  if (s.call.max_depth) child_frame.max_depth = std::min(frame_.max_depth, frame_.depth + *s.call.max_depth);
  child_frame.chain.push_back(child.name);
  // The child's leaves: their own resources, then the child recipe's, then this step's.
  const auto caller = placement_of(s);
  child_frame.inherited.resources = inherit_resources(child.resources, caller.resources);
  child_frame.inherited.local_only = caller.local_only;
  child_frame.builtins["recipe"] = {{"name", child.name}, {"version", child.version}, {"description", child.description}};
  child_frame.builtins.erase("stage");
  child_frame.builtins.erase("step");

  auto start = rs_.make_event(event_kind::step_start, instance, "recipe");
  start.attempt = attempt;
  rs_.emit(start);
  step_executor child_run(rs_, child_frame);
  context_export_cache exports;
  auto seq = co_await child_run.run_recipe(scope{&context, nullptr, &exports, nullptr, sc.upstream}, instance + "/", stop);
  o.result.step_id = instance;
  o.result.attempts = 1;
  o.result.children = std::move(seq.results);
  o.result.usage = usage_of(o.result.children);
  o.waiting = std::move(seq.waiting);
  // A step inside that failed under --keep-going fails the call, as a fatal one does; the
  // rest of the sub-recipe ran. A fatal failure inside (an `on_error: fail` written out, which
  // -k leaves alone) fails the call by the call's own on_error, -k or not.
  if (seq.kept_going && (seq.end == flow::next || seq.end == flow::skip_remaining)) {
    o.result.status = step_status::failed;
    o.result.error = "step '" + instance + "': sub-recipe '" + child.name + "' failed: " + failed_children(o.result.children);
    // A skip_remaining inside ended the sub-recipe, never its caller.
    o.next = failure_flow(s, rs_.options.keep_going);
    // What it would have given back (its steps' outputs) is not there for the caller's steps.
    auto unwritten = [&o](const std::vector<step>& steps) {
      for (const auto& st : steps) o.unwritten.merge(names_written(st));
    };
    unwritten(child.steps);
    for (const auto& st : child.stages) unwritten(st.steps);
    co_return o;
  }
  switch (seq.end) {
    case flow::fatal:
      o.result.status = step_status::failed;
      o.result.error = "step '" + instance + "': sub-recipe '" + child.name + "' failed: " +
                       (seq.error.empty() ? failed_children(o.result.children) : seq.error);
      o.next = failure_flow(s, false);
      co_return o;
    case flow::cancelled:
      o.result.status = step_status::cancelled;
      o.result.error = "step '" + instance + "': cancelled";
      o.next = flow::cancelled;
      co_return o;
    case flow::suspend:
      o.result.status = step_status::not_run;
      o.next = flow::suspend;
      co_return o;
    case flow::next:
    case flow::skip_remaining:
    case flow::kept_going: break;
  }
  // Success: every key the child created or changed comes back (docs/reference/recipe.md,
  // "Sub-recipe steps").
  boost::json::object delta;
  for (const auto& kv : context) {
    const auto* old = initial.if_contains(kv.key());
    if (!old || *old != kv.value()) delta[kv.key()] = kv.value();
  }
  o.result.status = step_status::completed;
  o.result.output = delta;
  o.updates = delta;
  if (s.output) o.updates[*s.output] = std::move(delta);
  co_return o;
}

}  // namespace arun::engine
