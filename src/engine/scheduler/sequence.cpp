// Sequential execution with parallel groups (docs/running.md, "What a recipe does when it runs";
// docs/reference/recipe.md, "parallel_group"), and stages (docs/reference/recipe.md, "Stages").
#include "scheduler/step_executor.hpp"

#include "scheduler/task_group.hpp"
#include "scheduler/upstream_failures.hpp"
#include "step_preparation.hpp"

#include <algorithm>
#include <utility>

namespace arun::engine {
namespace {

// Records a finished instance of `s` in the sequence: its updates land in the scope now.
void absorb(sequence_outcome& out, const step& s, instance_outcome&& o, scope sc, upstream_failures& upstream) {
  if (!o.updates.empty()) {  // target() drops the context's export: only for a real write
    auto& target = sc.target();
    for (auto& kv : o.updates) target[kv.key()] = std::move(kv.value());
  }
  const auto st = o.result.status;
  if (st == step_status::completed || st == step_status::degraded) {
    out.last_output = o.result.output;
    upstream.succeeded(s);
  }
  if (o.kept_going) {
    out.kept_going = true;
    upstream.failed(s, o.result.step_id, o.unwritten);
  }
  out.end = worse(out.end, o.next);
  append_waiting(out.waiting, o.waiting);
  out.results.push_back(std::move(o.result));
}

}  // namespace

boost::asio::awaitable<sequence_outcome> step_executor::run_steps(const std::vector<step>& steps, scope sc,
                                                                  std::string prefix, std::stop_token stop, bool dag,
                                                                  upstream_failures* upstream) {
  upstream_failures own(sc.upstream);  // a loop body's iteration: its own steps, and what failed around it
  auto& failures = upstream ? *upstream : own;
  if (dag) co_return co_await run_dag(steps, sc, prefix, stop, failures);
  co_return co_await run_sequence(steps, sc, prefix, stop, failures);
}

instance_outcome step_executor::hold_back(const step& s, const std::string& instance,
                                          const upstream_failures::hold& cause, upstream_failures& upstream) {
  instance_outcome o;
  o.result = unstarted(instance, step_status::not_run, "step '" + instance + "': " + cause.why);
  report_unstarted(s, o.result);
  upstream.held_back(s, instance, cause);
  return o;
}

boost::asio::awaitable<sequence_outcome> step_executor::run_sequence(const std::vector<step>& steps, scope sc,
                                                                     const std::string& prefix, std::stop_token stop,
                                                                     upstream_failures& upstream) {
  sequence_outcome out;
  out.results.reserve(steps.size());  // not grown by doubling: a group may have 20,000 members
  sc.upstream = &upstream;  // what the steps run inside (loop bodies, sub-recipes) must not read either
  std::size_t i = 0;
  while (i < steps.size()) {
    const step& s = steps[i];
    if (out.end == flow::next && stop.stop_requested()) out.end = flow::cancelled;
    if (out.end != flow::next) {
      // After skip_remaining the rest is skipped; after a fatal failure or a stop it never ran.
      const auto status = out.end == flow::skip_remaining ? step_status::skipped : step_status::not_run;
      out.results.push_back(unstarted(prefix + s.id, status));
      report_unstarted(s, out.results.back());
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    if (s.parallel_group)
      while (end < steps.size() && steps[end].parallel_group == s.parallel_group) ++end;
    // Under --keep-going, a step that depends on one that failed does not run (make -k). Only
    // those get an outcome here: a group of 20,000 members holds no second set of them.
    std::vector<std::pair<std::size_t, instance_outcome>> held;
    std::vector<const step*> members;
    members.reserve(end - i);
    for (std::size_t k = i; k < end; ++k) {
      if (auto cause = upstream.blocking(steps[k]); !cause.why.empty())
        held.emplace_back(k, hold_back(steps[k], prefix + steps[k].id, cause, upstream));
      else
        members.push_back(&steps[k]);
    }
    std::vector<instance_outcome> outcomes;
    if (members.size() > 1)
      outcomes = co_await run_group(members, sc, prefix, stop);
    else if (members.size() == 1)
      outcomes.push_back(co_await run_instance(*members.front(), sc, prefix + members.front()->id, stop));
    // Merged after every member finished, in declaration order, never finishing order.
    for (std::size_t k = i, ran = 0, h = 0; k < end; ++k) {
      const bool was_held = h < held.size() && held[h].first == k;
      absorb(out, steps[k], was_held ? std::move(held[h++].second) : std::move(outcomes[ran++]), sc, upstream);
    }
    i = end;
  }
  co_return out;
}

void step_executor::report_unstarted(const step& s, const step_result& r) {
  // Audit logs account for every declared step; a skipped one is final (resume keeps it).
  if (rs_.options.journal && r.status == step_status::skipped) rs_.options.journal->record(r, {});
  auto e = rs_.make_event(event_kind::step_end, r.step_id, type_name(s));
  e.result = &r;
  rs_.emit(e);
}

boost::asio::awaitable<void> step_executor::run_member(const step& s, scope sc, std::string instance,
                                                       std::stop_source& group, instance_outcome& slot) {
  slot = co_await run_instance(s, sc, std::move(instance), group.get_token());
  // Fail fast: a fatal failure cancels the members still running.
  if (slot.next == flow::fatal) group.request_stop();
}

namespace {

// A member that is one bash child at a time: until it holds a slot of the concurrency limit
// it can do nothing, so it need not exist before a slot may come free. Loops, sub-recipes,
// agents (which wait for their own limits first), steps waiting for an approval and steps
// with `retry` (whose waits between attempts hold no slot and must overlap) start at once.
bool pooled(const step& s) {
  return s.type == step_type::bash && !is_loop(s) && !s.approval.required && !s.retry;
}

}  // namespace

struct step_executor::group_run {
  const std::vector<const step*>& members;
  std::vector<std::size_t> queue;  // the pooled members' indexes, in declaration order
  std::size_t next = 0;            // the first of `queue` no worker has taken
  std::vector<instance_outcome>& outcomes;
  std::stop_source& stop;
  const std::string& prefix;
};

instance_outcome step_executor::cancel_unstarted_member(const step& s, scope sc, const std::string& instance) {
  // Stopped before a worker took it: it ends as it would have had it waited for a slot from
  // the start. Recorded, filtered by tags or its condition, it settles as that says;
  // otherwise it is cancelled (reported and journaled), so that a resume runs it again.
  const auto key = content_key(s, sc);
  if (auto settled = settle_before_start(s, sc, instance, std::stop_token{}, false, key)) return std::move(*settled);
  instance_outcome o;
  o.result = unstarted(instance, step_status::cancelled, "step '" + instance + "': cancelled before it started");
  o.result.content_key = key;
  o.result.started_at = o.result.ended_at = std::chrono::system_clock::now();
  o.next = flow::cancelled;
  return finish_instance(s, instance, false, std::move(o));
}

boost::asio::awaitable<void> step_executor::group_worker(scope sc, group_run& g) {
  while (g.next < g.queue.size()) {
    const auto k = g.queue[g.next++];
    const step& s = *g.members[k];
    auto instance = g.prefix + s.id;
    if (g.stop.stop_requested()) {
      g.outcomes[k] = cancel_unstarted_member(s, sc, instance);
      continue;
    }
    co_await run_member(s, sc, std::move(instance), g.stop, g.outcomes[k]);
  }
}

boost::asio::awaitable<std::vector<instance_outcome>> step_executor::run_group(const std::vector<const step*>& members,
                                                                               scope sc, const std::string& prefix,
                                                                               std::stop_token stop) {
  std::vector<instance_outcome> outcomes(members.size());
  std::stop_source group;
  std::stop_callback forward(stop, [&group] { group.request_stop(); });
  // Every member sees the context as it was when the group started: nothing writes to the
  // scope until all have finished (their updates come back in the outcomes).
  group_run g{members, {}, 0, outcomes, group, prefix};
  for (std::size_t k = 0; k < members.size(); ++k)
    if (pooled(*members[k])) g.queue.push_back(k);
  // Pooled members start through workers, twice as many as the run has slots (so the next
  // members are prepared and queued for a slot while others run their hooks or end): a group
  // of 20,000 keeps a few dozen members in memory at once, not 20,000 coroutine chains, and
  // they still start in order.
  const auto workers = std::min(g.queue.size(), 2 * static_cast<std::size_t>(std::max(1, rs_.options.max_concurrent)));
  task_group tasks(rs_.executor);
  std::size_t started_workers = 0;
  for (std::size_t k = 0; k < members.size(); ++k) {
    if (!pooled(*members[k])) {
      tasks.spawn(run_member(*members[k], sc, prefix + members[k]->id, group, outcomes[k]));
    } else if (started_workers < workers) {  // a worker per pooled member up to `workers`, in order
      ++started_workers;
      tasks.spawn(group_worker(sc, g));
    }
  }
  co_await tasks.join();
  co_return outcomes;
}

boost::asio::awaitable<sequence_outcome> step_executor::run_recipe(scope sc, std::string prefix, std::stop_token stop) {
  const recipe& r = frame_.r;
  const bool dag = r.execution == execution_mode::dag;
  upstream_failures upstream(sc.upstream);  // across stages: a later stage may read an earlier one's outputs
  if (r.stages.empty()) co_return co_await run_steps(r.steps, sc, prefix, stop, dag, &upstream);
  sequence_outcome out;
  for (std::size_t index = 0; index < r.stages.size(); ++index) {
    const auto& st = r.stages[index];
    frame_.builtins["stage"] = {{"name", st.name}, {"index", index}};
    bool run = out.end == flow::next && !stop.stop_requested();
    // --keep-going: a stage whose condition reads what a failed step did not write is not run.
    if (auto cause = run ? upstream.blocking_condition(st.condition) : upstream_failures::hold{}; !cause.why.empty()) {
      cause.why = "not run: the condition of its stage '" + st.name + "'" + cause.why.substr(std::string("not run: it").size());
      for (const auto& s : st.steps) out.results.push_back(std::move(hold_back(s, prefix + s.id, cause, upstream).result));
      continue;
    }
    if (run && !st.condition.empty()) {
      const auto verdict = check_expression(st.condition, "stage condition", view(sc, frame_.builtins));
      rs_.warn(prefix + st.name, verdict.warnings, "stage");
      if (!verdict.error.empty()) {
        out.end = flow::fatal;
        out.error = "stage '" + st.name + "': " + verdict.error;
      }
      run = verdict.error.empty() && verdict.run;
      if (verdict.error.empty() && !verdict.run) {
        for (const auto& s : st.steps) {
          out.results.push_back(unstarted(prefix + s.id, step_status::skipped));
          report_unstarted(s, out.results.back());
        }
        continue;
      }
    }
    if (!run && out.end == flow::next && stop.stop_requested()) out.end = flow::cancelled;
    if (!run) {
      const auto status = out.end == flow::skip_remaining ? step_status::skipped : step_status::not_run;
      for (const auto& s : st.steps) {
        out.results.push_back(unstarted(prefix + s.id, status));
        report_unstarted(s, out.results.back());
      }
      continue;
    }
    const bool gate_after = st.approval.required && stage_gate_after(st, r);
    if (st.approval.required && !gate_after) {
      auto gated = co_await run_stage_gate(st, sc, prefix, stop);
      if (gated) {  // not approved: this stage's steps never start
        out.end = gated->end;
        out.error = std::move(gated->error);
        append_waiting(out.waiting, gated->waiting);
        const auto status = out.end == flow::skip_remaining ? step_status::skipped : step_status::not_run;
        for (const auto& s : st.steps) {
          out.results.push_back(unstarted(prefix + s.id, status));
          report_unstarted(s, out.results.back());
        }
        continue;
      }
    }
    auto part = co_await run_steps(st.steps, sc, prefix, stop, dag, &upstream);
    for (auto& res : part.results) out.results.push_back(std::move(res));
    if (!part.last_output.is_null()) out.last_output = std::move(part.last_output);
    out.end = part.end;
    out.kept_going = out.kept_going || part.kept_going;
    append_waiting(out.waiting, part.waiting);
    if (gate_after && out.end == flow::next) {
      auto gated = co_await run_stage_gate(st, sc, prefix, stop);
      if (gated) {
        out.end = gated->end;
        out.error = std::move(gated->error);
        append_waiting(out.waiting, gated->waiting);
      }
    }
  }
  frame_.builtins.erase("stage");
  co_return out;
}

}  // namespace arun::engine
