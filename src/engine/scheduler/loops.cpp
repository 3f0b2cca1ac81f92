// Loops (docs/reference/recipe.md, "Loops"): foreach fans out over a frozen item list with N
// workers pulling indices from a cursor, so memory follows the concurrency, not the item count;
// while repeats its body until its condition, break_when or max_while_iterations ends it.
#include "scheduler/step_executor.hpp"

#include "scheduler/foreach_lines.hpp"
#include "scheduler/task_group.hpp"
#include "step_preparation.hpp"


#include <algorithm>
#include <atomic>

namespace arun::engine {
namespace {

// An iteration that did not finish well, by why (iteration_counts).
// How a loop's result names a failed iteration: its id and the first line of its error.
failed_instance failed_instance_of(const step_result& r) {
  return failed_instance{r.step_id, r.error.substr(0, r.error.find('\n'))};
}

// The failed instances a result stands for, innermost: those its loops list (`fan[2]/inner[5]`,
// which has a log), a sub-recipe's failed steps, else itself when it failed. A completed result
// may hold some too (an inner loop or a sub-recipe step under on_error: continue).
void add_failures(std::vector<failed_instance>& out, const step_result& r) {
  if (!r.failed_instances.empty()) {
    out.insert(out.end(), r.failed_instances.begin(), r.failed_instances.end());
    return;
  }
  const auto before = out.size();
  for (const auto& child : r.children) add_failures(out, child);
  if (out.size() == before && r.status == step_status::failed) out.push_back(failed_instance_of(r));
}

void count_unfinished(iteration_counts& c, step_status st) {
  switch (st) {
    case step_status::failed: ++c.failed; break;
    case step_status::cancelled: ++c.cancelled; break;
    case step_status::not_run: ++c.not_run; break;
    default: ++c.skipped; break;
  }
}


// A loop's own result: counts, the collected list as output, collect/output variables.
// A failed loop (status failed) still continues the run when its on_error says so (`end`).
instance_outcome loop_outcome(const step& s, iteration_counts counts, boost::json::array collected, step_status status,
                              flow end, const std::string& error) {
  instance_outcome o;
  o.result.iterations = counts;
  o.result.output = std::move(collected);
  o.result.status = status;
  o.result.error = error;
  o.next = end;
  if (status != step_status::completed) return o;
  if (s.foreach && s.foreach->collect) o.updates[*s.foreach->collect] = o.result.output;
  if (s.output) o.updates[*s.output] = o.result.output;
  return o;
}


bool finished_well(step_status s) { return s == step_status::completed || s == step_status::degraded; }

}  // namespace

struct step_executor::foreach_run {
  boost::json::array items;  // frozen when the loop starts (docs/reference/recipe.md, "foreach")
  boost::json::array collected;
  iteration_counts counts;
  std::size_t cursor = 0;
  std::stop_source stop;   // a fatal iteration (fail fast) or the run's stop
  bool skipping = false;   // skip_remaining: no further iterations
  std::string error;       // the first fatal iteration's
  flow end = flow::next;
  std::string kept_going;  // --keep-going: the first failed iteration's error; the loop ends failed
  std::vector<std::pair<std::size_t, failed_instance>> failures;  // by item index: workers finish in any order
  void failed(std::size_t item, const step_result& r) {
    std::vector<failed_instance> these;
    add_failures(these, r);
    for (auto& f : these) failures.emplace_back(item, std::move(f));
  }
  std::optional<agent_usage> usage;  // what the iterations spent
  // Iterations stopped at an approval gate, by index: the others go on to their own gates
  // or their end, so one resume after the decisions finishes the fan-out.
  std::vector<std::pair<std::size_t, pending_approval>> waiting;
  // Handed off whole (hand_off): the loop holds `held` slots for its leaves, never more than
  // the items still unfinished, so the slots of a draining fan-out go back to its siblings.
  std::shared_ptr<const fan_out_share> share;
  concurrency_limiter* limiter = nullptr;
  int held = 0;
  std::size_t unfinished = 0;

  void item_finished() noexcept {
    if (!share) return;
    --unfinished;
    if (static_cast<std::size_t>(held) > unfinished) {
      limiter->release(held - static_cast<int>(unfinished));
      held = static_cast<int>(unfinished);
    }
  }
  ~foreach_run() {
    if (held > 0) limiter->release(held);
  }
};

// A queued leaf keeps its coroutines and job record in memory (about 25 KB) until it ends:
// a loop hands over at most this many items at once, and the next as those end.
constexpr std::size_t most_items_handed_off_at_once = 10000;

std::shared_ptr<fan_out_share> step_executor::hand_off(const step& s, std::size_t n, int limit) {
  // The one leaf each item runs: the looping step itself, or its only body step.
  if (n < 2 || s.steps.size() > 1) return nullptr;
  const step& body = s.steps.empty() ? s : s.steps.front();
  if ((body.type != step_type::bash && body.type != step_type::agent) || !body.steps.empty() ||
      (&body != &s && is_loop(body)))
    return nullptr;
  // What would make a leaf wait for a slot of its own while the loop holds the slots: a
  // hook or auto_stage (local children), an agent's max_concurrent_llm or min_delay_ms, a
  // configured provider limit or limit_group.
  const auto& hooks = frame_.r.hooks;
  if (!hooks.pre_step.empty() || !hooks.post_step.empty() || !hooks.on_error.empty()) return nullptr;
  if (const auto group = rs_.group_of(body); !group.empty() && rs_.groups.configured(group)) return nullptr;
  if (body.type == step_type::agent &&
      (rs_.agent_limiter || rs_.agent_spacing.count() > 0 || body.agent.auto_stage || rs_.options.agents.auto_stage))
    return nullptr;
  // One at a time (a sequential loop), or `skip_remaining`: an item must not start after an
  // earlier one failed, and a cluster starts the next queued task before arun could stop it.
  if (limit <= 1 || rs_.limiter.limit() <= 1 || body.on_error == on_error_policy::skip_remaining ||
      s.on_error == on_error_policy::skip_remaining)
    return nullptr;
  if (!rs_.runner.takes_fan_outs(placement_of(body))) return nullptr;
  static std::atomic<std::uint64_t> loops_handed_off{0};
  auto share = std::make_shared<fan_out_share>();
  share->id = ++loops_handed_off;
  share->items = std::min(n, most_items_handed_off_at_once);
  share->throttle = std::max(1, std::min(limit, rs_.limiter.limit()));
  return share;
}

boost::asio::awaitable<void> step_executor::foreach_worker(const step& s, scope sc, const std::string& instance,
                                                          foreach_run& loop) {
  const auto& as = s.foreach->as;
  // A reached budget starts no further item: each settles before it starts (a recorded one
  // is replayed, the others are not run).
  while (loop.cursor < loop.items.size() && !loop.skipping && !loop.stop.stop_requested()) {
    const std::size_t i = loop.cursor++;
    // Iteration-local names hide the context's; the body's outputs stay in here too.
    boost::json::object locals = sc.locals ? *sc.locals : boost::json::object{};
    locals[as] = loop.items[i];
    locals["_loop_index"] = i;
    locals["_loop_iteration"] = i + 1;
    auto o = co_await run_instance(s, scope{sc.context, &locals, sc.exports, loop.share ? &loop.share : nullptr, sc.upstream},
                                   instance + "[" + std::to_string(i) + "]", loop.stop.get_token(), true);
    loop.item_finished();
    add_usage(loop.usage, o.result.usage);
    if (o.next == flow::suspend) {
      ++loop.counts.waiting;
      for (auto& w : o.waiting) loop.waiting.emplace_back(i, std::move(w));
      continue;
    }
    const auto st = o.result.status;
    // A completed iteration may hold failures too (its body's under on_error: continue).
    if (st == step_status::failed || !o.result.failed_instances.empty() || !o.result.children.empty())
      loop.failed(i, o.result);
    if (finished_well(st)) {
      ++loop.counts.completed;
      if (o.result.cached) ++loop.counts.cached;
      loop.collected[i] = std::move(o.result.output);
    } else {
      count_unfinished(loop.counts, st);
    }
    if (o.kept_going && loop.kept_going.empty()) loop.kept_going = o.result.error;
    if (o.next == flow::fatal && loop.end != flow::fatal) {
      loop.end = flow::fatal;
      loop.error = o.result.error;
      loop.stop.request_stop();  // fail fast: running iterations are cancelled
    } else if (o.next == flow::skip_remaining) {
      loop.skipping = true;
      loop.end = worse(loop.end, flow::skip_remaining);
    }
  }
}

boost::asio::awaitable<instance_outcome> step_executor::run_foreach(const step& s, scope sc, const std::string& instance,
                                                                    std::stop_token stop) {
  const auto& spec = *s.foreach;
  const auto builtins = step_builtins(s, instance);
  auto rendered = render_value(spec.items, view(sc, builtins));
  warn(s, instance, rendered.warnings);
  if (!rendered.ok()) co_return failed_before_start(s, instance, "foreach: " + rendered.error, rs_.options.keep_going);
  auto items = foreach_items(spec.items, rendered.value);
  if (auto* why = std::get_if<std::string>(&items)) co_return failed_before_start(s, instance, *why, rs_.options.keep_going);
  foreach_run loop;
  loop.items = std::move(std::get<boost::json::array>(items));
  const auto n = loop.items.size();
  if (n > static_cast<std::size_t>(std::max(0, spec.max_iterations)))
    co_return failed_before_start(s, instance, "foreach has " + std::to_string(n) + " items, more than max_iterations (" +
                                               std::to_string(spec.max_iterations) + ")",
                                         rs_.options.keep_going);
  if (n == 0) {
    // Nothing ran, so nothing completed (the older runners say skipped); `collect` and
    // `output` still get the empty list, so a later loop over them has nothing to do.
    warn(s, instance, {"foreach has no items: the step is skipped"});
    auto o = loop_outcome(s, loop.counts, {}, step_status::completed, flow::next, {});
    o.result.status = step_status::skipped;
    co_return o;
  }
  loop.collected.resize(n);
  loop.counts.total = n;
  auto start = rs_.make_event(event_kind::step_start, instance, "loop");
  start.items = n;
  rs_.emit(start);

  std::stop_callback forward(stop, [&loop] { loop.stop.request_stop(); });
  const int limit = spec.max_concurrent <= 0 ? rs_.options.max_concurrent : spec.max_concurrent;
  auto workers = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, limit)), n);
  if (auto share = hand_off(s, n, limit)) {
    // Every item at once: the runner submits them together and runs `throttle` at a time.
    const int slots = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(share->throttle), n));
    const bool got = co_await rs_.limiter.acquire(loop.stop.get_token(), slots);
    if (got) {
      loop.limiter = &rs_.limiter;
      loop.held = slots;
      loop.unfinished = n;
      workers = share->items;
      loop.share = std::move(share);
    } else {
      workers = 0;  // stopped while waiting for the slots: nothing started
    }
  }
  task_group tasks(rs_.executor);
  for (std::size_t w = 0; w < workers; ++w) tasks.spawn(foreach_worker(s, sc, instance, loop));
  co_await tasks.join();

  const auto& c = loop.counts;
  const auto finished = c.completed + c.failed + c.skipped + c.waiting + c.cancelled + c.not_run;
  loop.counts.not_run += n - finished;  // never started: the loop ended early
  if (loop.end == flow::next && stop.stop_requested()) loop.end = flow::cancelled;
  // Items the budget left unstarted: the loop ends as a stopped one does, for resume.
  if (loop.end == flow::next && rs_.draining() && c.not_run + c.cancelled > 0) {
    loop.end = flow::cancelled;
    // Items that never started and items the budget stopped between their calls (which
    // spent, and count in the usage) are told apart.
    const auto of_n = [&](std::size_t k) { return std::to_string(k) + " of " + std::to_string(n) + " items"; };
    std::string what;
    if (c.not_run > 0) what = of_n(c.not_run) + " not started";
    if (c.cancelled > 0)
      what += (what.empty() ? of_n(c.cancelled) : ", " + std::to_string(c.cancelled)) + " stopped before a further call";
    loop.error = "step '" + instance + "': " + what + ": " + rs_.refuse_for_budget().substr(not_started_prefix.size());
  }
  if (!loop.waiting.empty()) loop.end = worse(loop.end, flow::suspend);
  // Under --keep-going the other items ran; the loop failed all the same, and says so.
  const bool kept_going = !loop.kept_going.empty() && (loop.end == flow::next || loop.end == flow::skip_remaining);
  if (kept_going) {
    loop.error = "step '" + instance + "': " + std::to_string(c.failed) + " of " + std::to_string(n) +
                 " items failed; the first: " + loop.kept_going;
    if (loop.end == flow::next) loop.end = flow::kept_going;
  }
  const auto status = loop.end == flow::fatal || kept_going ? step_status::failed
                      : loop.end == flow::cancelled ? step_status::cancelled
                      : loop.end == flow::suspend   ? step_status::not_run
                                                    : step_status::completed;
  auto o = loop_outcome(s, loop.counts, std::move(loop.collected), status, loop.end,
                        loop.end == flow::cancelled && loop.error.empty() ? "step '" + instance + "': cancelled"
                                                                          : loop.error);
  o.kept_going = kept_going;
  o.result.usage = std::move(loop.usage);
  std::stable_sort(loop.failures.begin(), loop.failures.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& f : loop.failures) o.result.failed_instances.push_back(std::move(f.second));
  std::stable_sort(loop.waiting.begin(), loop.waiting.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& w : loop.waiting) o.waiting.push_back(std::move(w.second));
  co_return o;
}

boost::asio::awaitable<instance_outcome> step_executor::run_iteration(const step& s, scope sc,
                                                                      const std::string& instance, std::stop_token stop) {
  rs_.emit(rs_.make_event(event_kind::step_start, instance, "iteration"));
  // A while loop's body writes to variables the next iteration reads: they are this
  // iteration's updates, so a resume that replays it from the journal restores them.
  const bool carries = s.loop_while.has_value();
  const boost::json::object before = carries ? sc.target() : boost::json::object{};
  auto body = co_await run_steps(s.steps, sc, instance + "/", stop, false);
  instance_outcome o;
  for (const auto& r : body.results) add_failures(o.result.failed_instances, r);
  if (carries)
    for (const auto& kv : sc.target())
      if (const auto* old = before.if_contains(kv.key()); !old || *old != kv.value()) o.updates[kv.key()] = kv.value();
  o.result.output = std::move(body.last_output);
  o.result.usage = usage_of(body.results);
  // A body step that failed under --keep-going fails its iteration, as a fatal one does.
  const bool kept_going = body.kept_going && (body.end == flow::next || body.end == flow::skip_remaining);
  const bool body_failed = body.end == flow::fatal || kept_going;
  // A fatal failure in the body (an `on_error: fail` written out, which -k leaves alone) fails
  // the iteration by the loop's own on_error, -k or not.
  o.next = body.end == flow::fatal                   ? failure_flow(s, false)
           : kept_going && body.end == flow::next ? failure_flow(s, rs_.options.keep_going)
                                                   : body.end;
  o.kept_going = kept_going && body.end == flow::skip_remaining;
  switch (body_failed ? flow::fatal : body.end) {
    case flow::fatal: {
      o.result.status = step_status::failed;
      for (const auto& r : body.results)
        if (r.status == step_status::failed && r.fatal && o.result.error.empty()) o.result.error = r.error;
      if (o.result.error.empty()) o.result.error = "step '" + instance + "': " + body.error;
      break;
    }
    case flow::cancelled: o.result.status = step_status::cancelled; break;
    case flow::suspend:  // a gate in the body waits: the iteration runs again at the resume
      o.result.status = step_status::not_run;
      o.waiting = std::move(body.waiting);
      break;
    default: o.result.status = step_status::completed;
  }
  co_return o;
}

boost::asio::awaitable<instance_outcome> step_executor::run_while(const step& s, scope sc, const std::string& instance,
                                                                  std::stop_token stop) {
  const auto& spec = *s.loop_while;
  // The loop's variables persist across iterations: the body's outputs and update_context
  // are what the condition sees next time.
  const boost::json::object before = sc.locals ? *sc.locals : boost::json::object{};
  boost::json::object locals = before;
  const scope inner{sc.context, &locals, sc.exports};
  boost::json::array collected;
  iteration_counts counts;
  flow end = flow::next;
  bool failed = false;
  std::string error;
  std::vector<pending_approval> waiting;
  std::optional<agent_usage> spent;
  std::vector<failed_instance> failures;
  rs_.emit(rs_.make_event(event_kind::step_start, instance, "loop"));
  for (std::size_t i = 0;; ++i) {
    if (stop.stop_requested()) {
      end = flow::cancelled;
      error = "step '" + instance + "': cancelled";
      break;
    }
    locals["_loop_index"] = i;
    locals["_loop_iteration"] = i + 1;
    const auto builtins = step_builtins(s, instance);
    const auto go = check_expression(spec.condition, "while_condition", view(inner, builtins));
    warn(s, instance, go.warnings);
    if (!go.error.empty() || (go.run && i >= static_cast<std::size_t>(std::max(0, spec.max_iterations)))) {
      end = failure_flow(s, rs_.options.keep_going);
      failed = true;
      ++counts.total;  // the iteration that was refused
      error = "step '" + instance + "': " +
              (go.error.empty() ? "the loop reached max_while_iterations (" + std::to_string(spec.max_iterations) +
                                      ") and its condition still holds"
                                : go.error);
      ++counts.failed;
      break;
    }
    if (!go.run) break;
    ++counts.total;
    auto o = co_await run_instance(s, inner, instance + "[" + std::to_string(i) + "]", stop, true);
    add_usage(spent, o.result.usage);
    if (o.next == flow::suspend) {  // the next iteration depends on this one: stop here
      ++counts.waiting;
      end = flow::suspend;
      waiting = std::move(o.waiting);
      break;
    }
    for (auto& kv : o.updates) locals[kv.key()] = std::move(kv.value());
    const auto st = o.result.status;
    collected.push_back(finished_well(st) ? o.result.output : nullptr);
    add_failures(failures, o.result);
    if (finished_well(st)) {
      ++counts.completed;
      if (o.result.cached) ++counts.cached;
    } else {
      count_unfinished(counts, st);
    }
    if (o.kept_going) {  // --keep-going: the next iteration would read what this one left
      end = flow::kept_going;
      failed = true;
      error = o.result.error;
      break;
    }
    if (o.next == flow::fatal || o.next == flow::cancelled) {
      end = o.next;
      failed = o.next == flow::fatal;
      error = o.result.error;
      break;
    }
    if (o.next == flow::skip_remaining) {
      end = flow::skip_remaining;
      break;
    }
    auto updated = render_value(spec.update_context, view(inner, builtins));
    warn(s, instance, updated.warnings);
    if (!updated.ok()) {
      end = failure_flow(s, rs_.options.keep_going);
      failed = true;
      error = "step '" + instance + "': update_context: " + updated.error;
      break;
    }
    if (auto* fields = updated.value.if_object())
      for (auto& kv : *fields) locals[kv.key()] = std::move(kv.value());
    const auto stop_now = check_expression(spec.break_when, "break_when", view(inner, builtins));
    warn(s, instance, stop_now.warnings);
    if (!spec.break_when.empty() && (stop_now.run || !stop_now.error.empty())) {
      if (!stop_now.error.empty()) {
        end = failure_flow(s, rs_.options.keep_going);
        failed = true;
        error = "step '" + instance + "': " + stop_now.error;
      }
      break;
    }
  }
  const auto status = failed                 ? step_status::failed
                      : end == flow::cancelled ? step_status::cancelled
                      : end == flow::suspend   ? step_status::not_run
                                               : step_status::completed;
  auto o = loop_outcome(s, counts, std::move(collected), status, end, error);
  o.result.usage = std::move(spent);
  o.result.failed_instances = std::move(failures);
  o.waiting = std::move(waiting);
  if (status == step_status::completed) {
    // The loop's own variables (not its counters) become visible after it.
    for (const auto& kv : locals) {
      if (kv.key() == "_loop_index" || kv.key() == "_loop_iteration") continue;
      const auto* old = before.if_contains(kv.key());
      if (!old || *old != kv.value()) o.updates[kv.key()] = kv.value();
    }
    if (s.output) o.updates[*s.output] = o.result.output;
  }
  co_return o;
}

}  // namespace arun::engine
