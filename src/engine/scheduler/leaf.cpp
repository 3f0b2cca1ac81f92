// Leaf work: bash and agent steps as child processes through the step runner, under the
// run's concurrency limit, with retry and backoff (docs/reference/recipe.md, "Bash steps",
// "Outputs", "Failures, retries and timeouts"); hooks (docs/reference/recipe.md, "Hooks").
#include "scheduler/step_executor.hpp"

#include "output_value.hpp"
#include "spilled_output.hpp"
#include "policy/json_extract.hpp"
#include "policy/retry.hpp"
#include "policy/schema_check.hpp"
#include "step_preparation.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <optional>
#include <utility>

namespace arun::engine {
namespace asio = boost::asio;

std::optional<std::chrono::nanoseconds> effective_timeout(const step& s, const recipe& r) {
  const auto t = s.timeout ? s.timeout : r.default_step_timeout;
  // 0 means no limit (docs/reference/recipe.md, "Timeouts"); so does anything beyond ~31 years,
  // which would overflow.
  constexpr double longest_seconds = 1e9;
  if (!t || t->count() <= 0 || !(t->count() < longest_seconds)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(*t);
}

instance_outcome to_outcome(const step& s, const std::string& instance, leaf_outcome&& o, const run_options& run,
                            int calls) {
  auto* outputs = run.outputs;
  instance_outcome out;
  auto& r = out.result;
  r.step_id = instance;
  r.exit_code = o.exit_code;
  r.signal = o.signal;
  r.timed_out = o.timed_out;
  r.truncated = o.truncated;
  r.duration = o.duration;
  r.queued = o.queued;
  r.attempts = o.started ? 1 : 0;
  if (s.output_exit_code && o.exit_code) out.updates[*s.output_exit_code] = *o.exit_code;
  if (!o.succeeded()) {
    r.status = o.cancelled ? step_status::cancelled : step_status::failed;
    r.error = "step '" + instance + "': " + o.error;
    if (!o.snippet.empty()) r.error += "\n" + o.snippet;
    out.next = o.cancelled ? flow::cancelled : failure_flow(s, run.keep_going);
    return out;
  }
  r.status = step_status::completed;
  if (s.output_schema) {
    auto verdict = check_output(*s.output_schema, o.stdout_text);
    if (!verdict.conforms()) {
      r.status = step_status::failed;
      r.error = "step '" + instance + "': " + schema_failure(*s.output_schema, verdict.problems, calls);
      out.next = failure_flow(s, run.keep_going);
      return out;
    }
    r.output = std::move(*verdict.value);
  } else if (!s.parse_json) {
    r.output = keep_output(o.stdout_text, outputs, instance);
  } else if (auto parsed = extract_json(o.stdout_text)) {
    r.output = std::move(*parsed);
  } else if (s.parse_json_required) {
    r.status = step_status::failed;
    r.error = "step '" + instance + "': parse_json_required: the output holds no JSON";
    out.next = failure_flow(s, run.keep_going);
    return out;
  } else {
    r.status = step_status::degraded;  // the raw text is kept
    r.error = "step '" + instance + "': parse_json: the output holds no JSON; the text was stored as it is";
    r.output = boost::json::string(trim(o.stdout_text));
  }
  if (s.output) out.updates[*s.output] = r.output;
  return out;
}

namespace {

attempt_failure attempt_failure_of(const step_result& r) {
  attempt_failure f;
  f.timed_out = r.timed_out;
  f.cancelled = r.status == step_status::cancelled;
  f.exit_code = r.exit_code;
  return f;
}

bool retries_rate_limits(const std::optional<retry_policy>& p) {
  return p && std::any_of(p->on.begin(), p->on.end(), [](const retry_on_entry& e) {
           const auto* t = std::get_if<retry_trigger>(&e);
           return t && *t == retry_trigger::rate_limit;
         });
}

// A child that died of a signal, or exited as a shell does after one (128 + SIGINT or
// SIGTERM), while its scope was being stopped (the interrupt, a sibling's fatal failure) was
// stopped by arun, whether or not the runner saw the stop before the child ended: it is
// cancelled, not failed, so that a resume runs it again.
leaf_outcome interrupted_is_cancelled(leaf_outcome o, const std::stop_token& stop) {
  constexpr int exit_after_sigint = 128 + 2, exit_after_sigterm = 128 + 15;
  const bool ended_by_signal = o.signal || o.exit_code == exit_after_sigint || o.exit_code == exit_after_sigterm;
  if (o.started && !o.succeeded() && !o.cancelled && !o.timed_out && ended_by_signal && stop.stop_requested()) {
    o.cancelled = true;
    o.error = "cancelled (" + o.error + ")";
  }
  return o;
}

}  // namespace

asio::awaitable<instance_outcome> step_executor::run_with_retry(const step& s, scope sc, const std::string& instance,
                                                                std::stop_token stop) {
  // An agent's rate limit has its own policy and count (docs/agents.md,
  // "Output, JSON and flaky agents"), unless the step's `retry` names rate_limit itself; other
  // failures count against the step's `retry`.
  const bool own_rate_limits = retries_rate_limits(s.retry);
  int judged = 0, rate_limited = 0;
  std::optional<agent_usage> spent;
  std::optional<std::chrono::nanoseconds> queued;
  std::string model;  // the rate-limit fallback model, for the last rate-limit retry only
  for (int attempt = 1;; ++attempt) {
    instance_outcome o = co_await run_attempt(s, sc, instance, attempt, stop, std::exchange(model, {}));
    // Attempts that never started a child (a missing working directory) do not count.
    o.result.attempts += attempt - 1;
    // Every attempt's wait in a cluster's queue is left out of the instance's duration.
    if (o.result.queued) queued = queued.value_or(std::chrono::nanoseconds::zero()) + *o.result.queued;
    o.result.queued = queued;
    add_usage(spent, o.result.usage);  // every attempt's calls count
    o.result.usage = spent;
    if (o.result.status != step_status::failed || stop.stop_requested()) co_return o;
    auto failure = attempt_failure_of(o.result);
    failure.rate_limited = o.rate_limited;
    const retry_policy* policy = nullptr;
    int n = 0;
    if (o.rate_limited && !own_rate_limits) {
      policy = &rs_.rate_limit_policy;
      n = ++rate_limited;
    } else if (s.retry) {
      policy = &*s.retry;
      n = ++judged;
    }
    // The attempt ended: stopped by a stop or a reached budget, a retry is not started (nor
    // announced and waited for: docs/agents.md, "Usage, cost and budgets").
    auto no_retry = [&] {
      o.result.status = step_status::cancelled;
      o.result.error = (stop.stop_requested() ? "step '" + instance + "': cancelled while waiting to retry; "
                                              : "step '" + instance + "': " + rs_.refuse_for_budget() + " for a retry; ") +
                       o.result.error;
      o.next = flow::cancelled;
      o.updates = {};
      return std::move(o);
    };
    if (!policy || !should_retry(*policy, failure, n)) {
      if (s.type == step_type::recipe && !s.call.recovery_on_failure.is_null() && o.next != flow::cancelled)
        co_return co_await recover(s, sc, instance, std::move(o), stop);
      co_return o;
    }
    if (rs_.draining()) co_return no_retry();
    const auto delay = retry_delay(*policy, n, rs_.unit_random());
    auto e = rs_.make_event(event_kind::step_retry, instance, instance_type(s, is_loop(s)));
    e.attempt = attempt;
    e.delay = delay;
    e.message = (o.rate_limited ? "rate limited: " : "") + first_line(o.result.error);
    // The last retry a rate limit gets may use another model (amplihack's `auto` fallback).
    const auto& fallback = rs_.options.agents.rate_limit_fallback_model;
    if (o.rate_limited && s.type == step_type::agent && !fallback.empty() && n + 1 >= policy->max_attempts) {
      model = fallback;
      e.message += "; the last retry uses model " + fallback;
    }
    rs_.emit(e);
    // An awaited timer, never a blocking sleep; stopping the run ends the wait at once.
    asio::steady_timer wait(rs_.executor, delay);
    std::stop_callback on_stop(stop, [&wait] { wait.cancel(); });
    co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
    if (stop.stop_requested() || rs_.draining()) co_return no_retry();
  }
}

asio::awaitable<instance_outcome> step_executor::run_attempt(const step& s, scope sc, const std::string& instance,
                                                             int attempt, std::stop_token stop, const std::string& model) {
  switch (s.type) {
    case step_type::recipe:
      co_return co_await run_with_deadline(container_kind::recipe_call, s, sc, instance, attempt, stop);
    case step_type::agent: co_return co_await run_agent(s, sc, instance, attempt, stop, model);
    default: co_return co_await run_bash(s, sc, instance, attempt, stop);
  }
}

leaf_placement step_executor::placement_of(const step& s) {
  leaf_placement p;
  p.local_only = s.local_only || frame_.inherited.local_only;
  if (!s.resources || !frame_.inherited.resources) {
    p.resources = s.resources ? s.resources : frame_.inherited.resources;
    return p;
  }
  auto& merged = frame_.resources[&s];
  if (!merged) merged = inherit_resources(s.resources, frame_.inherited.resources);
  p.resources = merged;
  return p;
}

int step_executor::slot_weight(const step& s, const std::string& instance, const leaf_placement& p) {
  if (p.fan_out) return 0;  // its loop holds the slots (hand_off)
  if (!p.resources || !p.resources->cpus || !(rs_.options.leaves_run_here || p.local_only)) return 1;
  const int cpus = *p.resources->cpus;
  if (cpus > rs_.limiter.limit())
    warn(s, instance, {"resources.cpus is " + std::to_string(cpus) + ", more than --max-concurrent " +
                       std::to_string(rs_.limiter.limit()) + ": each instance takes every slot"});
  return rs_.limiter.slots_for(cpus);
}

asio::awaitable<instance_outcome> step_executor::run_bash(const step& s, scope sc, const std::string& instance,
                                                          int attempt, std::stop_token stop) {
  auto builtins = step_builtins(s, instance);
  auto tree = co_await isolate(s, sc, instance, builtins);
  if (!tree.error.empty()) co_return failed_before_start(s, instance, tree.error, rs_.options.keep_going);
  auto prepared = prepare_bash(s, view(sc, builtins), frame_.r.env, sc.export_table());
  warn(s, instance, prepared.warnings);
  if (!prepared.error.empty()) {
    auto failed = failed_before_start(s, instance, prepared.error, rs_.options.keep_going);
    if (tree.ws) co_await release(s, instance, *tree.ws, failed);
    co_return failed;
  }
  bash_invocation inv = std::move(prepared.invocation);
  inv.instance_id = instance;
  if (tree.ws) inv.working_dir = tree.ws->dir;
  // A cached output is reused before any slot is asked for: a hit starts nothing.
  auto cache = probe_cache(s, sc, instance, inv);
  warn(s, instance, cache.warnings);
  if (cache.hit)
    if (auto reused = cached_outcome(s, instance, std::move(*cache.hit))) co_return std::move(*reused);
  inv.timeout = effective_timeout(s, frame_.r);
  inv.placement = placement_of(s);
  if (sc.fan_out) inv.placement.fan_out = *sc.fan_out;
  const int weight = slot_weight(s, instance, inv.placement);
  group_lease lease;
  auto out = co_await run_child(std::move(inv), instance, "bash", attempt, stop, weight, rs_.group_of(s), &lease);
  warn(s, instance, out.warnings);
  if (out.succeeded()) lease.finish(false);
  if (tree.ws) {
    auto o = to_outcome(s, instance, std::move(out), rs_.options);
    co_await release(s, instance, *tree.ws, o);
    co_return o;
  }
  if (cache.key.empty()) co_return to_outcome(s, instance, std::move(out), rs_.options);
  const auto text = out.stdout_text;
  const auto took = out.duration;
  auto o = to_outcome(s, instance, std::move(out), rs_.options);
  remember_output(s, sc, instance, cache, o, text, took);
  co_return o;
}

asio::awaitable<leaf_outcome> step_executor::run_child(leaf_invocation inv, const std::string& instance,
                                                       std::string_view type, int attempt, std::stop_token stop,
                                                       int weight, std::string_view group, group_lease* lease) {
  auto* agent = std::get_if<agent_invocation>(&inv);
  // The limit group's slot first, then an agent's max_concurrent_llm slot, so neither wait
  // holds a global slot; the min_delay_ms spacing is awaited last (holding every slot). A
  // leaf of a handed-off fan-out takes a group slot only when the group has a configured
  // limit (then its loop is not handed off at all).
  std::optional<slot_lease> agent_lease;
  const auto asked = steady::now();
  bool may_start = true;
  if (weight == 0 && !rs_.groups.configured(group)) group = {};
  if (lease && !group.empty()) may_start = co_await rs_.groups.acquire(group, *lease, stop);
  if (agent && may_start) may_start = co_await await_agent_slot(agent_lease, stop);
  bool got_slot = weight == 0;  // a leaf of a handed-off fan-out: its loop holds the slots
  if (may_start && !got_slot) got_slot = co_await rs_.limiter.acquire(stop, weight);  // g++ 12: no co_await in a condition
  // The spacing is claimed with every slot in hand, so the start it allows is not delayed.
  if (got_slot && agent) {
    const bool spaced = co_await await_agent_spacing(stop);
    if (!spaced) {
      if (weight > 0) rs_.limiter.release(weight);
      got_slot = false;
    }
  }
  // A slot can be handed over just before a sibling fails fast or the run is interrupted:
  // check again, or the child would start after its scope was stopped.
  // A budget reached while this waited for its slots: no new call starts.
  const bool refused = type != "hook" && rs_.draining();
  if (!got_slot || !may_start || stop.stop_requested() || refused) {
    if (got_slot && weight > 0) rs_.limiter.release(weight);
    leaf_outcome o;
    o.cancelled = true;
    o.error = refused && !stop.stop_requested() ? rs_.refuse_for_budget() : "cancelled before it started";
    co_return o;
  }
  slot_lease global_slots(rs_.limiter, weight);
  if (rs_.options.on_slot_wait)
    if (const auto waited = steady::now() - asked; waited >= std::chrono::milliseconds(1))
      rs_.options.on_slot_wait(instance, waited);
  // step_start and heartbeats when the child runs. A leaf of a handed-off fan-out (weight 0),
  // or any leaf placed on a cluster (a Slurm job), may wait in the cluster's queue first: it
  // starts when the runner says it runs, prints a line, or ends, so progress counts running
  // jobs, not queued ones, and a running instance's age is its run time.
  std::optional<run_state::running_leaf> tracked;
  std::function<void()> started = [this, &tracked, &instance, type, attempt, group, lease] {
    if (tracked) return;
    tracked.emplace(rs_.track(instance, std::string(type)));
    if (type == "hook") return;  // a hook belongs to its step's instance, which has its own start
    auto start = rs_.make_event(event_kind::step_start, instance, type);
    start.attempt = attempt;
    if (lease && lease->held()) {
      const auto g = rs_.groups.view(group);
      start.group = {std::string(g.name), g.running, g.limit, g.configured};
    }
    rs_.emit(start);
  };
  const auto& placement = agent ? agent->placement : std::get<bash_invocation>(inv).placement;
  if (weight > 0 && !rs_.runner.takes_fan_outs(placement)) started();
  output_line_handler on_line = [&rs = rs_, &started, instance, type = std::string(type)](
                                    output_stream stream, std::string_view line, bool cut) {
    started();
    auto e = rs.make_event(event_kind::step_output, instance, type);
    e.stream = stream;
    e.line = line;
    e.line_truncated = cut;
    rs.emit(e);
  };
  running_handler on_running = [&started] { started(); };
  auto work = agent ? (agent->on_line = std::move(on_line), agent->on_running = std::move(on_running),
                       rs_.runner.run_agent(std::move(*agent)))
                    : (std::get<bash_invocation>(inv).on_line = std::move(on_line),
                       std::get<bash_invocation>(inv).on_running = std::move(on_running),
                       rs_.runner.run_bash(std::move(std::get<bash_invocation>(inv))));
  // The runner sees cancellation through its own slot: stopping this instance's scope (a
  // failed sibling, the interrupt) terminates the child's process group.
  asio::cancellation_signal cancel;
  std::stop_callback on_stop(stop, [&cancel] { cancel.emit(asio::cancellation_type::terminal); });
  auto o = co_await asio::co_spawn(rs_.executor, std::move(work),
                                   asio::bind_cancellation_slot(cancel.slot(), asio::use_awaitable));
  if (o.started) started();  // ran without the runner saying so (it ended between two looks)
  co_return interrupted_is_cancelled(std::move(o), stop);
}

asio::awaitable<void> step_executor::run_hook(const std::string& command, const step& s, const std::string& instance,
                                              const step_result* finished, scope sc) {
  auto builtins = step_builtins(s, instance);
  boost::json::object about{{"id", instance}, {"index", builtins["step"].as_object()["index"]}};
  about["status"] = finished ? boost::json::value(to_string(finished->status)) : boost::json::value("running");
  about["error"] = finished ? finished->error : "";
  builtins["step"] = std::move(about);
  step hook;
  hook.id = s.id;
  hook.command = command;
  auto prepared = prepare_bash(hook, view(sc, builtins), frame_.r.env, sc.export_table());
  warn(s, instance, prepared.warnings);
  const std::string which = finished == nullptr ? "pre_step" : &command == &frame_.r.hooks.on_error ? "on_error" : "post_step";
  if (!prepared.error.empty()) {
    warn(s, instance, {which + " hook not run: " + prepared.error});
    co_return;
  }
  auto inv = std::move(prepared.invocation);
  inv.instance_id = instance;
  inv.timeout = rs_.options.hook_timeout;
  inv.placement.local_only = true;  // a hook is the recipe's bookkeeping, not work to place
  // A failed sibling does not stop a hook (it is short and bounded); the interrupt does.
  auto out = co_await run_child(std::move(inv), instance, "hook", 1, rs_.interrupt.get_token());
  if (!out.succeeded()) warn(s, instance, {which + " hook failed: " + out.error});
}

}  // namespace arun::engine
