// Agent steps (docs/reference/recipe.md, "Agent steps"): one agent child per attempt through the
// step runner, under the global limit and the recipe's rate_limiting (docs/reference/recipe.md,
// "rate_limiting"); the "return only JSON" call of parse_json (docs/reference/recipe.md,
// "parse_json"); auto_stage; and recovery_on_failure of recipe steps (docs/agents.md,
// "auto_stage and recovery_on_failure").
#include "scheduler/step_executor.hpp"

#include "output_value.hpp"
#include "policy/json_extract.hpp"
#include "policy/schema_check.hpp"
#include "step_preparation.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace arun::engine {
namespace {

namespace asio = boost::asio;

/// The marker a recovery agent ends its reply with when the work is done (docs/agents.md,
/// "auto_stage and recovery_on_failure").
constexpr std::string_view recovered_marker = "STATUS: COMPLETE";

bool ends_with_marker(const std::string& reply) {
  const auto text = trim(reply);
  return text.size() >= recovered_marker.size() &&
         text.compare(text.size() - recovered_marker.size(), recovered_marker.size(), recovered_marker) == 0;
}

}  // namespace

asio::awaitable<bool> step_executor::await_agent_slot(std::optional<slot_lease>& lease, std::stop_token stop) {
  if (!rs_.agent_limiter) co_return true;
  const bool got = co_await rs_.agent_limiter->acquire(stop);
  if (got) lease.emplace(*rs_.agent_limiter);
  co_return got;
}

asio::awaitable<bool> step_executor::await_agent_spacing(std::stop_token stop) {
  // min_delay_ms: claim the next start time; waiters that wake together re-check, one wins.
  while (rs_.agent_spacing.count() > 0) {
    const auto now = steady::now();
    if (!rs_.last_agent_start || now >= *rs_.last_agent_start + rs_.agent_spacing) {
      rs_.last_agent_start = now;
      break;
    }
    asio::steady_timer wait(rs_.executor, *rs_.last_agent_start + rs_.agent_spacing);
    std::stop_callback on_stop(stop, [&wait] { wait.cancel(); });
    co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
    if (stop.stop_requested()) co_return false;
  }
  co_return true;
}

asio::awaitable<instance_outcome> step_executor::run_agent(const step& s, scope sc, const std::string& instance,
                                                           int attempt, std::stop_token stop, const std::string& model) {
  auto builtins = step_builtins(s, instance);
  auto tree = co_await isolate(s, sc, instance, builtins);
  if (!tree.error.empty()) co_return failed_before_start(s, instance, tree.error, rs_.options.keep_going);
  auto prepared = prepare_agent(s.agent, s, view(sc, builtins), rs_.options.working_dir, frame_.r.env);
  warn(s, instance, prepared.warnings);
  if (!prepared.error.empty()) {
    auto failed = failed_before_start(s, instance, prepared.error, rs_.options.keep_going);
    if (tree.ws) co_await release(s, instance, *tree.ws, failed);
    co_return failed;
  }
  auto inv = std::move(prepared.invocation);
  inv.instance_id = instance;
  if (tree.ws) inv.working_dir = tree.ws->dir;
  // Before the rate-limit fallback model: the key is of the work asked for. A hit is reused
  // before any slot or spacing is waited for, and spends nothing.
  auto cache = probe_cache(s, sc, instance, inv);
  warn(s, instance, cache.warnings);
  if (cache.hit)
    if (auto reused = cached_outcome(s, instance, std::move(*cache.hit))) co_return std::move(*reused);
  inv.timeout = effective_timeout(s, frame_.r);
  if (!model.empty()) inv.model = model;
  inv.placement = placement_of(s);
  if (sc.fan_out) inv.placement.fan_out = *sc.fan_out;
  const int weight = slot_weight(s, instance, inv.placement);
  const auto dir = inv.working_dir;
  // Kept for the calls that ask again (parse_json's reminder, output_schema's corrections):
  // same agent, persona, model and timeout.
  const auto again = s.parse_json || s.output_schema ? std::optional<agent_invocation>(inv) : std::nullopt;
  const auto group = rs_.group_of(s);
  group_lease lease;
  std::optional<agent_usage> spent;  // every call of this attempt
  std::optional<std::chrono::nanoseconds> queued;  // every call's wait in a cluster's queue
  auto account = [&](leaf_outcome& call) {
    if (call.queued) queued = queued.value_or(std::chrono::nanoseconds::zero()) + *call.queued;
    if (!call.usage) return;
    call.usage->calls = std::max<std::uint64_t>(call.usage->calls, 1);
    if (!call.usage->cost_usd) call.usage->calls_without_cost = call.usage->calls;
    add_usage(spent, call.usage);
    rs_.record_spend(*call.usage, instance);
  };
  auto out = co_await run_child(std::move(inv), instance, "agent", attempt, stop, weight, group, &lease);
  warn(s, instance, out.warnings);
  account(out);
  int calls = 1;
  // Each call counts as an attempt of the step (its result's `attempts`): the reply that is
  // asked again is attempt `attempt - 1 + calls`, the call that asks is the next one.
  auto call_attempt = [&] { return attempt - 1 + calls; };
  auto ask_again = [&](std::string_view why, std::string_view addition) {
    auto e = rs_.make_event(event_kind::step_retry, instance, instance_type(s, is_loop(s)));
    e.attempt = call_attempt();
    e.delay = std::chrono::nanoseconds::zero();
    e.message = std::string(why);
    rs_.emit(e);
    lease.finish(false);  // the call before completed cleanly
    auto call = *again;
    call.prompt.append(addition);
    return call;
  };
  // A reached budget starts no further call (docs/agents.md, "Usage, cost and budgets"): the
  // instance stops as a refused retry does, and a resume with a larger budget runs it again.
  auto budget_stopped = [&](std::string_view call, const std::string& why) {
    if (!rs_.draining() || stop.stop_requested()) return false;
    leaf_outcome refused;
    refused.started = true;  // this attempt's earlier calls ran (they count as its attempts)
    refused.cancelled = true;
    refused.error = rs_.refuse_for_budget() + " for " + std::string(call) + "; " + why;
    refused.duration = out.duration;
    lease.finish(false);  // the call before completed cleanly
    out = std::move(refused);
    return true;
  };
  if (again && !s.output_schema && out.succeeded() && !extract_json(out.stdout_text) && !stop.stop_requested() &&
      !budget_stopped("parse_json's reminder", "the reply held no JSON")) {
    auto reminder = ask_again("parse_json: the reply held no JSON; asking once more for JSON only",
                              "\n\n" + std::string(json_only_reminder));
    out = co_await run_child(std::move(reminder), instance, "agent", call_attempt() + 1, stop, weight, group, &lease);
    warn(s, instance, out.warnings);
    account(out);
    ++calls;
  }
  for (int round = 1; s.output_schema && round <= s.schema_retries && out.succeeded() && !stop.stop_requested(); ++round) {
    const auto verdict = check_output(*s.output_schema, out.stdout_text);
    if (verdict.conforms()) break;
    const auto problem = "the reply does not conform (" + verdict.problems.front() +
                         (verdict.problems.size() > 1 ? ", …" : "") + ")";
    if (budget_stopped("an output_schema correction", problem)) break;
    auto correction = ask_again("output_schema: " + problem + "; asking again (" + std::to_string(round) + " of " +
                                    std::to_string(s.schema_retries) + ")",
                                schema_correction(*s.output_schema, verdict.problems, out.stdout_text));
    out = co_await run_child(std::move(correction), instance, "agent", call_attempt() + 1, stop, weight, group, &lease);
    warn(s, instance, out.warnings);
    account(out);
    ++calls;
  }
  const bool started = out.started;
  const bool cancelled = out.cancelled;
  std::string rate_text;
  if (!out.succeeded()) rate_text = out.snippet + "\n" + out.error;
  const bool clean = out.succeeded();
  const bool cli_said_rate_limited = out.rate_limited;
  const auto reply = cache.key.empty() ? std::string() : out.stdout_text;
  const auto took = out.duration;
  out.queued = queued;
  auto o = to_outcome(s, instance, std::move(out), rs_.options, calls);
  // A reply of the rate-limit fallback model is not the requested model's: not kept.
  if (model.empty()) remember_output(s, sc, instance, cache, o, reply, took);
  if (o.result.attempts > 0) o.result.attempts = calls;
  o.result.usage = std::move(spent);
  o.rate_limited = o.result.status == step_status::failed && !o.result.timed_out && !cancelled &&
                   (cli_said_rate_limited || rs_.rate_limited(rate_text));
  if (o.rate_limited) {
    lease.finish(true);
  } else if (clean) {
    lease.finish(false);
  }
  if (started && !cancelled && (s.agent.auto_stage || rs_.options.agents.auto_stage) && !stop.stop_requested())
    co_await stage_changes(s, instance, dir);
  if (tree.ws) co_await release(s, instance, *tree.ws, o);
  co_return o;
}

asio::awaitable<void> step_executor::stage_changes(const step& s, const std::string& instance, const std::string& dir) {
  bash_invocation inv;
  inv.instance_id = instance;
  inv.command = "git add -A";
  inv.working_dir = dir;
  inv.timeout = rs_.options.hook_timeout;
  inv.placement.local_only = true;  // bookkeeping in a shared checkout, like a hook
  auto out = co_await run_child(std::move(inv), instance, "hook", 1, rs_.interrupt.get_token());
  if (!out.succeeded())
    warn(s, instance, {"auto_stage: 'git add -A' failed: " + out.error + (out.snippet.empty() ? "" : " | " + first_line(out.snippet))});
}

asio::awaitable<instance_outcome> step_executor::recover(const step& s, scope sc, const std::string& instance,
                                                         instance_outcome failed, std::stop_token stop) {
  const auto& spec = s.call.recovery_on_failure;
  agent_call call;
  std::optional<double> timeout;
  if (const auto* o = spec.if_object()) {
    auto text = [&](const char* key) {
      const auto* v = o->if_contains(key);
      return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    call.agent = text("agent");
    call.prompt = text("prompt");
    call.mode = text("mode");
    call.model = text("model");
    if (const auto* t = o->if_contains("timeout"); t && t->is_number()) timeout = t->to_number<double>();
  } else if (!(spec.is_bool() && spec.get_bool())) {
    co_return failed;  // `false`; other shapes are refused by validation
  }
  if (call.prompt.empty())
    call.prompt = "Step '{{step.id}}' ran the sub-recipe '" + s.call.recipe + "', which failed. Finish the work it was meant to do.";
  call.prompt += "\n\n## What failed\n" + failed.result.error +
                 "\n\nWhen, and only when, the work is complete, end your reply with the line `" +
                 std::string(recovered_marker) + "`.";
  const std::string id = instance + "/recovery_on_failure";
  const auto builtins = step_builtins(s, instance);
  auto prepared = prepare_agent(call, s, view(sc, builtins), rs_.options.working_dir, frame_.r.env);
  warn(s, instance, prepared.warnings);
  if (!prepared.error.empty()) {
    failed.result.error += "\nrecovery_on_failure could not start: " + prepared.error;
    co_return failed;
  }
  auto inv = std::move(prepared.invocation);
  inv.instance_id = id;
  inv.placement = placement_of(s);
  // A century at most: nanoseconds hold about 292 years, and a larger figure is no limit.
  constexpr double century = 100.0 * 365 * 24 * 3600;
  if (timeout && *timeout > 0 && *timeout < century)
    inv.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(*timeout));
  warn(s, instance, {"the sub-recipe failed; recovery_on_failure asks agent '" + (inv.agent.empty() ? std::string("(default)") : inv.agent) + "' to finish the work"});
  group_lease lease;  // the recovery agent counts against the provider's limit too
  auto out = co_await run_child(std::move(inv), id, "agent", 1, stop, 1, rs_.options.agent_provider, &lease);
  warn(s, instance, out.warnings);
  if (out.succeeded()) lease.finish(false);
  if (out.usage) {
    out.usage->calls = std::max<std::uint64_t>(out.usage->calls, 1);
    if (!out.usage->cost_usd) out.usage->calls_without_cost = out.usage->calls;
    rs_.record_spend(*out.usage, id);
  }
  step_result attempt_result;
  attempt_result.step_id = id;
  attempt_result.duration = out.duration;
  attempt_result.exit_code = out.exit_code;
  attempt_result.timed_out = out.timed_out;
  attempt_result.attempts = out.started ? 1 : 0;
  attempt_result.usage = out.usage;
  add_usage(failed.result.usage, out.usage);  // the step's spend includes its recovery
  const bool recovered = out.succeeded() && ends_with_marker(out.stdout_text);
  attempt_result.status = recovered ? step_status::completed : out.cancelled ? step_status::cancelled : step_status::failed;
  if (out.succeeded()) attempt_result.output = boost::json::string(trim(out.stdout_text));
  if (!recovered)
    attempt_result.error = out.succeeded() ? "the reply did not end with " + std::string(recovered_marker)
                                           : "step '" + id + "': " + out.error;
  auto end = rs_.make_event(event_kind::step_end, id, "agent");
  end.result = &attempt_result;
  rs_.emit(end);
  if (!recovered) {
    failed.result.error += "\nrecovery_on_failure did not recover it: " + attempt_result.error;
    if (out.cancelled) {
      failed.result.status = step_status::cancelled;
      failed.next = flow::cancelled;
    }
    co_return failed;
  }
  instance_outcome o = std::move(failed);
  o.result.status = step_status::completed;
  o.result.error.clear();
  o.result.output = attempt_result.output;
  o.next = flow::next;
  o.updates = {};
  if (s.output) o.updates[*s.output] = o.result.output;
  co_return o;
}

}  // namespace arun::engine
