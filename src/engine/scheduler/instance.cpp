// One step instance from start to end (docs/running.md, "What a recipe does when it runs"): resume
// lookup, tag filter, condition, pre_step hook, the body, post_step or on_error hook, the journal
// record, step_end.
#include "scheduler/step_executor.hpp"

#include "policy/tag_filter.hpp"
#include "step_preparation.hpp"

#include <arun/run_services.hpp>
#include <arun/value_format.hpp>

#include <algorithm>
#include <functional>

namespace arun::engine {
namespace {

// A journaled sub-recipe step holds its children one level deep; deeper ones come from the
// children's own records, each read once.
void restore_children(const run_journal& journal, std::vector<step_result>& children) {
  for (auto& child : children) {
    if (!child.children.empty()) continue;
    const auto* record = journal.find(child.step_id);
    if (!record || record->result.children.empty()) continue;
    child.children = record->result.children;
    restore_children(journal, child.children);
  }
}

}  // namespace

std::string_view type_name(const step& s) {
  if (is_loop(s)) return "loop";
  return to_string(s.type);
}

bool is_loop(const step& s) { return s.foreach.has_value() || s.loop_while.has_value(); }

std::string_view instance_type(const step& s, bool iteration) {
  if (!iteration) return type_name(s);
  if (!s.steps.empty()) return "iteration";
  step leaf_view;  // an iteration of a looping leaf step is that leaf
  leaf_view.type = s.type;
  return type_name(leaf_view);
}

void name_item(std::string& error, const std::string& instance, const boost::json::value& item) {
  // "step 'shard[15]': …" or "step 'shard[15]/run': …": the item follows the instance's name.
  const auto named = "step '" + instance;
  if (!error.starts_with(named) || error.size() == named.size()) return;
  if (const char next = error[named.size()]; next != '\'' && next != '/') return;
  const auto end = error.find('\'', named.size());
  if (end == std::string::npos) return;
  // An inner loop named its own item already: the outer one goes first, as in the id.
  const auto label = item_label(item);
  if (std::string_view(error).substr(end + 1).starts_with(" (item: "))
    error.replace(end + 1, 8, " (items: " + label + ", ");
  else if (std::string_view(error).substr(end + 1).starts_with(" (items: "))
    error.insert(end + 10, label + ", ");
  else
    error.insert(end + 1, " (item: " + label + ")");
}

flow failure_flow(const step& s, bool keep_going) {
  // -k is the user's, for the steps whose author did not decide (docs/running.md).
  const bool own_policy = s.on_error != on_error_policy::fail || s.has("on_error") || s.has("continue_on_error") ||
                          s.has("nonfatal") || s.has("fatal");
  if (keep_going && !own_policy) return flow::kept_going;
  switch (s.on_error) {
    case on_error_policy::continue_run: return flow::next;
    case on_error_policy::skip_remaining: return flow::skip_remaining;
    case on_error_policy::fail: break;
  }
  return flow::fatal;
}

std::optional<agent_usage> usage_of(const std::vector<step_result>& results) {
  std::optional<agent_usage> sum;
  for (const auto& r : results) add_usage(sum, r.usage);
  return sum;
}

step_result unstarted(std::string instance, step_status status, std::string error) {
  step_result r;
  r.step_id = std::move(instance);
  r.status = status;
  r.error = std::move(error);
  return r;
}

namespace {

// Hooks run around work that runs something; loops and gates are containers of such work.
bool runs_hooks(const step& s, bool iteration) {
  if (s.type == step_type::gate) return false;
  if (is_loop(s) && !iteration) return false;
  return !(iteration && !s.steps.empty());
}

}  // namespace

instance_outcome failed_before_start(const step& s, const std::string& instance, const std::string& why,
                                     bool keep_going) {
  instance_outcome o;
  o.result = unstarted(instance, step_status::failed, "step '" + instance + "': " + why);
  o.next = failure_flow(s, keep_going);
  o.result.fatal = o.next == flow::fatal;
  return o;
}

void step_executor::warn(const step& s, const std::string& instance, const std::vector<std::string>& messages) {
  const bool iteration = is_loop(s) && !instance.empty() && instance.back() == ']';
  rs_.warn(instance, messages, instance_type(s, iteration));
}

boost::json::object step_executor::step_builtins(const step& s, const std::string& instance) const {
  if (frame_.step_index.empty()) {
    std::function<void(const std::vector<step>&)> number = [&](const std::vector<step>& steps) {
      for (std::size_t i = 0; i < steps.size(); ++i) {
        frame_.step_index[&steps[i]] = i;
        number(steps[i].steps);
      }
    };
    number(frame_.r.steps);
    for (const auto& st : frame_.r.stages) number(st.steps);
  }
  boost::json::object b = frame_.builtins;
  const auto it = frame_.step_index.find(&s);
  b["step"] = {{"id", instance}, {"index", it == frame_.step_index.end() ? 0 : it->second}};
  return b;
}

instance_outcome step_executor::finish_instance(const step& s, const std::string& instance, bool iteration,
                                                instance_outcome&& o) {
  if (o.next == flow::kept_going) {
    o.next = flow::next;
    o.kept_going = true;
  }
  // A failure the run ends failed on is fatal for the journal too: a resume runs it again.
  if (o.result.status == step_status::failed && o.kept_going) o.result.fatal = true;
  o.result.skipped_rest = o.next == flow::skip_remaining;
  if (rs_.options.journal && o.next != flow::suspend) rs_.options.journal->record(o.result, o.updates);
  auto e = rs_.make_event(event_kind::step_end, instance, instance_type(s, iteration));
  e.result = &o.result;
  rs_.emit(e);
  return std::move(o);
}

instance_outcome step_executor::replay(const step& s, const std::string& instance, bool iteration,
                                       const finished_instance& done) {
  instance_outcome o;  // resume: taken as it was recorded, never re-run
  o.result = done.result;
  if (o.result.skipped_rest) o.next = flow::skip_remaining;  // as it ended the first time
  // What it spent counts against this run's budget too: a resume continues the session's.
  // A journal that keeps every call counted them all at the start, the calls of instances
  // that run again included; an older one only has the replayed instances' (recorded now).
  if (o.result.usage && rs_.counts_replayed_spend()) rs_.record_spend(*o.result.usage, instance);
  restore_children(*rs_.options.journal, o.result.children);
  o.updates = done.context_delta;
  auto e = rs_.make_event(event_kind::step_end, instance, instance_type(s, iteration));
  e.result = &o.result;
  rs_.emit(e);
  return o;
}

std::optional<instance_outcome> step_executor::settle_before_start(const step& s, scope sc,
                                                                   const std::string& instance,
                                                                   const std::stop_token& stop, bool iteration,
                                                                   const std::string& key) {
  if (rs_.options.journal) {
    if (const auto* done = rs_.options.journal->find(instance)) {
      if (!rs_.options.reload) return replay(s, instance, iteration, *done);
      // --reload: a leaf is taken only as the same work on the same inputs; a container is
      // entered, so that each instance inside it is judged on its own.
      // A recorded failure is never kept: the fix `--reload` follows may be outside the recipe
      // (a script the step runs, a source file), which no key sees (docs/sessions.md).
      const bool failed = done->result.status == step_status::failed;
      if (!key.empty() && done->result.content_key == key && !failed) {
        rs_.reused.push_back(instance);
        return replay(s, instance, iteration, *done);
      }
      if (!key.empty()) (done->result.content_key == key ? rs_.failed_again : rs_.changed).push_back(instance);
    }
  }
  if (stop.stop_requested()) {
    instance_outcome o;
    o.result = unstarted(instance, step_status::not_run);
    o.next = flow::cancelled;
    return o;
  }
  auto skipped = [&] {
    instance_outcome o;
    o.result = unstarted(instance, step_status::skipped);
    o.result.content_key = key;
    return finish_instance(s, instance, iteration, std::move(o));
  };
  if (!iteration) {  // an iteration's tags and condition were the loop's
    if (!tags_allow(s.when_tags, rs_.options.include_tags, rs_.options.exclude_tags)) return skipped();
    const auto builtins = step_builtins(s, instance);
    const auto verdict = check_condition(s, view(sc, builtins));
    warn(s, instance, verdict.warnings);
    if (!verdict.error.empty()) {
      auto failed = failed_before_start(s, instance, verdict.error, rs_.options.keep_going);
      failed.result.content_key = key;
      return finish_instance(s, instance, iteration, std::move(failed));
    }
    if (!verdict.run) return skipped();
  }
  // A reached budget: a step that would run does not start (one its tags or condition skip
  // is skipped as ever).
  if (rs_.draining()) {
    instance_outcome o;
    o.result = unstarted(instance, step_status::not_run, "step '" + instance + "': " + rs_.refuse_for_budget());
    o.next = flow::cancelled;
    return o;
  }
  // Loops and loop-body iterations are containers: what counts is the work inside them.
  const bool container = (is_loop(s) && !iteration) || (iteration && !s.steps.empty());
  if (!container && ++rs_.instances_started > rs_.limits.max_total_steps) {
    auto o = failed_before_start(s, instance, "the run reached recursion.max_total_steps (" +
                                                  std::to_string(rs_.limits.max_total_steps) + " step instances)",
                                  rs_.options.keep_going);
    o.next = flow::fatal;  // a runaway recipe stops, whatever its on_error says
    o.result.fatal = true;
    rs_.budget_exhausted = true;
    return finish_instance(s, instance, iteration, std::move(o));
  }
  return std::nullopt;
}

boost::asio::awaitable<instance_outcome> step_executor::run_instance(const step& s, scope sc, std::string instance,
                                                                     std::stop_token stop, bool iteration) {
  // Containers have no key of their own: what counts is the work inside them.
  const bool container = (is_loop(s) && !iteration) || (iteration && !s.steps.empty()) || s.type == step_type::recipe;
  const auto key = container ? std::string() : content_key(s, sc);
  if (auto settled = settle_before_start(s, sc, instance, stop, iteration, key)) co_return std::move(*settled);
  const bool hooks = runs_hooks(s, iteration);
  const auto& on = frame_.r.hooks;
  if (hooks && !stop.stop_requested() && !on.pre_step.empty()) co_await run_hook(on.pre_step, s, instance, nullptr, sc);
  const auto started = steady::now();
  const auto started_at = std::chrono::system_clock::now();
  auto o = co_await run_body(s, sc, instance, stop, iteration);
  o.result.step_id = instance;
  o.result.content_key = key;
  // A leaf stopped before its child started (waiting for a slot when the budget was reached,
  // or the run was interrupted) never ran: no duration, no start time (docs/reference/formats.md).
  const bool never_started = !container && o.result.attempts == 0 &&
                             (o.result.status == step_status::cancelled || o.result.status == step_status::not_run);
  o.result.duration = never_started ? std::chrono::nanoseconds{} : steady::now() - started;
  // A leaf's jobs that waited in a cluster's queue: its duration is what it ran
  // (docs/scale-out.md, queue time); started_at and ended_at stay the wall clock's.
  const auto wall = o.result.duration;
  if (o.result.queued) o.result.duration -= std::min(o.result.duration, *o.result.queued);
  if (!never_started && o.result.status != step_status::not_run) {  // a gate left waiting has not run yet
    o.result.started_at = started_at;
    o.result.ended_at = started_at + std::chrono::duration_cast<std::chrono::system_clock::duration>(wall);
  }
  // Past the step budget no on_error may turn a failure into "go on": the run must stop.
  if (rs_.budget_exhausted && o.result.status == step_status::failed && o.next != flow::suspend) o.next = flow::fatal;
  if (o.result.status == step_status::failed) o.result.fatal = o.next == flow::fatal;
  if (hooks && !stop.stop_requested()) {
    const bool bad = o.result.status == step_status::failed || o.result.status == step_status::cancelled;
    const auto& hook = bad ? on.on_error : on.post_step;
    if (!hook.empty()) co_await run_hook(hook, s, instance, &o.result, sc);
  }
  if (iteration && s.foreach && sc.locals)
    if (const auto* item = sc.locals->if_contains(s.foreach->as)) {
      if (o.result.status == step_status::failed) name_item(o.result.error, instance, *item);
      for (auto& f : o.result.failed_instances) name_item(f.error, instance, *item);
    }
  co_return finish_instance(s, instance, iteration, std::move(o));
}

boost::asio::awaitable<instance_outcome> step_executor::run_body(const step& s, scope sc, const std::string& instance,
                                                                 std::stop_token stop, bool iteration) {
  if (iteration && !s.steps.empty()) co_return co_await run_iteration(s, sc, instance, stop);
  if (!iteration && s.approval.required && s.type != step_type::gate)
    co_return co_await run_approved(s, sc, instance, stop);
  co_return co_await run_body_after_gate(s, sc, instance, stop, iteration);
}

boost::asio::awaitable<instance_outcome> step_executor::run_body_after_gate(const step& s, scope sc,
                                                                            const std::string& instance,
                                                                            std::stop_token stop, bool iteration) {
  // A loop's own timeout bounds the whole loop when its body is `steps:`; a looping leaf's
  // timeout bounds each iteration (the runner enforces it).
  const bool bounded = !s.steps.empty();
  if (!iteration && s.foreach && bounded)
    co_return co_await run_with_deadline(container_kind::foreach, s, sc, instance, 1, stop);
  if (!iteration && s.loop_while && bounded)
    co_return co_await run_with_deadline(container_kind::loop_while, s, sc, instance, 1, stop);
  if (!iteration && s.foreach) co_return co_await run_foreach(s, sc, instance, stop);
  if (!iteration && s.loop_while) co_return co_await run_while(s, sc, instance, stop);
  switch (s.type) {
    case step_type::gate: co_return co_await run_gate(s, sc, instance, stop);
    case step_type::bash:
    case step_type::agent:
    case step_type::recipe: co_return co_await run_with_retry(s, sc, instance, stop);
    case step_type::loop: break;
  }
  co_return failed_before_start(s, instance, "a loop step needs foreach or while_condition", rs_.options.keep_going);
}

}  // namespace arun::engine
