// `execution: dag` (docs/reference/recipe.md, "depends_on and execution: dag"): a step starts as
// soon as the steps it depends on — by depends_on, or by referencing their outputs — have finished.
#include "scheduler/step_executor.hpp"

#include "scheduler/task_group.hpp"
#include "dag_order.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>


namespace arun::engine {
namespace {

namespace asio = boost::asio;

}  // namespace

struct step_executor::dag_run {
  dag_run(const asio::any_io_executor& ex, std::size_t n, std::stop_token outer, upstream_failures& failures)
      : upstream(failures),
        changed(ex, asio::steady_timer::time_point::max()),
        done(n, false),
        outcomes(n),
        forward(outer, [this] {
          stop.request_stop();
          changed.cancel();
        }) {}
  upstream_failures& upstream;  // --keep-going: what failed, so its dependents do not run
  asio::steady_timer changed;  // cancelled (never expires) whenever a step finishes or the run stops
  std::vector<bool> done;
  std::vector<instance_outcome> outcomes;
  std::stop_source stop;  // a fatal failure or the run's stop
  bool skipping = false;  // skip_remaining: nothing new starts, the rest is skipped
  bool suspended = false;  // a gate suspended the run: nothing new starts
  std::stop_callback<std::function<void()>> forward;
};

asio::awaitable<void> step_executor::run_dag_node(const step& s, std::size_t index, const std::vector<std::size_t>& deps,
                                                  scope sc, std::string instance, dag_run& dag) {
  auto ready = [&] {
    for (auto d : deps)
      if (!dag.done[d]) return false;
    return true;
  };
  auto halted = [&] { return dag.stop.stop_requested() || dag.skipping || dag.suspended; };
  while (!ready() && !halted()) co_await dag.changed.async_wait(asio::as_tuple(asio::use_awaitable));
  auto& slot = dag.outcomes[index];
  if (halted()) {
    const bool skipped = dag.skipping && !dag.stop.stop_requested() && !dag.suspended;
    slot.result = unstarted(std::move(instance), skipped ? step_status::skipped : step_status::not_run);
    report_unstarted(s, slot.result);
  } else if (auto cause = dag.upstream.blocking(s); !cause.why.empty()) {
    slot = hold_back(s, instance, cause, dag.upstream);  // --keep-going: a dependency failed
  } else {
    slot = co_await run_instance(s, sc, instance, dag.stop.get_token());
    // Outputs land as soon as their step finishes: that is what dependents wait for.
    for (auto& kv : slot.updates) sc.target()[kv.key()] = kv.value();
    if (slot.kept_going) dag.upstream.failed(s, instance, slot.unwritten);
    const auto st = slot.result.status;
    if (st == step_status::completed || st == step_status::degraded) dag.upstream.succeeded(s);
    if (slot.next == flow::fatal) dag.stop.request_stop();  // fail fast
    // A suspended gate or skip_remaining starts nothing new; what runs may finish.
    if (slot.next == flow::suspend) dag.suspended = true;
    if (slot.next == flow::skip_remaining) dag.skipping = true;
  }
  dag.done[index] = true;
  dag.changed.cancel();
}

asio::awaitable<sequence_outcome> step_executor::run_dag(const std::vector<step>& steps, scope sc,
                                                         const std::string& prefix, std::stop_token stop,
                                                         upstream_failures& upstream) {
  const auto deps = dag_dependencies(steps);
  if (const auto cycle = dag_cycle(steps, deps); !cycle.empty()) {
    // The validator refuses such recipes; never wait forever if one gets here anyway.
    sequence_outcome out;
    for (const auto& s : steps) out.results.push_back(unstarted(prefix + s.id, step_status::not_run));
    out.end = flow::fatal;
    out.error = "execution: dag: the steps wait for each other: " + cycle;
    co_return out;
  }
  dag_run dag(rs_.executor, steps.size(), stop, upstream);
  sc.upstream = &upstream;  // what the steps run inside (loop bodies, sub-recipes) must not read either
  task_group tasks(rs_.executor);
  for (std::size_t i = 0; i < steps.size(); ++i)
    tasks.spawn(run_dag_node(steps[i], i, deps[i], sc, prefix + steps[i].id, dag));
  co_await tasks.join();
  sequence_outcome out;
  for (auto& o : dag.outcomes) {
    const auto st = o.result.status;
    if (st == step_status::completed || st == step_status::degraded) out.last_output = o.result.output;
    out.end = worse(out.end, o.next);
    out.kept_going = out.kept_going || o.kept_going;
    append_waiting(out.waiting, o.waiting);
    out.results.push_back(std::move(o.result));
  }
  if (out.end == flow::next && stop.stop_requested()) out.end = flow::cancelled;
  co_return out;
}

}  // namespace arun::engine
