// `execution: dag` (SPEC §6.4): a step starts as soon as the steps it depends on — by
// depends_on, or by referencing their outputs — have finished.
#include "scheduler/step_executor.hpp"

#include "scheduler/task_group.hpp"
#include "template/reference.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cctype>
#include <map>
#include <set>

namespace arun::engine {
namespace {

namespace asio = boost::asio;

void add_words(std::string_view text, std::set<std::string, std::less<>>& out) {
  // Conditions also read bare identifiers (`status == 'ok'`).
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!(std::isalpha(c) || c == '_')) {
      ++i;
      continue;
    }
    const auto start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    out.emplace(text.substr(start, i - start));
  }
}

void add_strings(const boost::json::value& v, std::set<std::string, std::less<>>& out) {
  if (const auto* s = v.if_string())
    for (const auto& span : find_references(*s)) out.insert(span.ref.root);
  if (const auto* a = v.if_array())
    for (const auto& item : *a) add_strings(item, out);
  if (const auto* o = v.if_object())
    for (const auto& kv : *o) add_strings(kv.value(), out);
}

// Every root name a step (and its loop body) reads.
void step_reads(const step& s, std::set<std::string, std::less<>>& out) {
  for (const auto* text : {&s.command, &s.agent.prompt, &s.working_dir, &s.call.recipe, &s.approval.prompt})
    for (const auto& span : find_references(*text)) out.insert(span.ref.root);
  for (const auto& kv : s.env)
    for (const auto& span : find_references(kv.second)) out.insert(span.ref.root);
  add_words(s.condition, out);
  if (s.foreach) add_strings(s.foreach->items, out);
  if (s.loop_while) {
    add_words(s.loop_while->condition, out);
    add_words(s.loop_while->break_when, out);
    add_strings(s.loop_while->update_context, out);
  }
  add_strings(s.call.context, out);
  for (const auto& child : s.steps) step_reads(child, out);
}

// For each step, the indices of the steps it waits for.
std::vector<std::vector<std::size_t>> dependencies(const std::vector<step>& steps) {
  std::map<std::string, std::size_t, std::less<>> by_id, by_output;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    by_id[s.id] = i;
    for (const auto* name : {&s.output, &s.output_exit_code})
      if (*name) by_output[**name] = i;
    if (s.foreach && s.foreach->collect) by_output[*s.foreach->collect] = i;
  }
  std::vector<std::vector<std::size_t>> deps(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::set<std::size_t> mine;
    for (const auto& d : steps[i].depends_on)
      if (auto it = by_id.find(d); it != by_id.end()) mine.insert(it->second);
    std::set<std::string, std::less<>> reads;
    step_reads(steps[i], reads);
    for (const auto& name : reads)
      if (auto it = by_output.find(name); it != by_output.end()) mine.insert(it->second);
    mine.erase(i);
    deps[i].assign(mine.begin(), mine.end());
  }
  return deps;
}

}  // namespace

struct step_executor::dag_run {
  dag_run(const asio::any_io_executor& ex, std::size_t n, std::stop_token outer)
      : changed(ex, asio::steady_timer::time_point::max()),
        done(n, false),
        outcomes(n),
        forward(outer, [this] {
          stop.request_stop();
          changed.cancel();
        }) {}
  asio::steady_timer changed;  // cancelled (never expires) whenever a step finishes or the run stops
  std::vector<bool> done;
  std::vector<instance_outcome> outcomes;
  std::stop_source stop;  // a fatal failure or the run's stop
  bool skipping = false;  // skip_remaining: nothing new starts, the rest is skipped
  std::stop_callback<std::function<void()>> forward;
};

asio::awaitable<void> step_executor::run_dag_node(const step& s, std::size_t index, const std::vector<std::size_t>& deps,
                                                  scope sc, std::string instance, dag_run& dag) {
  auto ready = [&] {
    for (auto d : deps)
      if (!dag.done[d]) return false;
    return true;
  };
  while (!ready() && !dag.stop.stop_requested() && !dag.skipping)
    co_await dag.changed.async_wait(asio::as_tuple(asio::use_awaitable));
  auto& slot = dag.outcomes[index];
  if (dag.stop.stop_requested() || dag.skipping) {
    slot.result = unstarted(std::move(instance), dag.skipping && !dag.stop.stop_requested() ? step_status::skipped
                                                                                            : step_status::not_run);
  } else {
    slot = co_await run_instance(s, sc, std::move(instance), dag.stop.get_token());
    // Outputs land as soon as their step finishes: that is what dependents wait for.
    for (auto& kv : slot.updates) sc.target()[kv.key()] = kv.value();
    if (slot.next == flow::fatal || slot.next == flow::suspend) dag.stop.request_stop();
    if (slot.next == flow::skip_remaining) dag.skipping = true;
  }
  dag.done[index] = true;
  dag.changed.cancel();
}

asio::awaitable<sequence_outcome> step_executor::run_dag(const std::vector<step>& steps, scope sc,
                                                         const std::string& prefix, std::stop_token stop) {
  const auto deps = dependencies(steps);
  dag_run dag(rs_.executor, steps.size(), stop);
  task_group tasks(rs_.executor);
  for (std::size_t i = 0; i < steps.size(); ++i)
    tasks.spawn(run_dag_node(steps[i], i, deps[i], sc, prefix + steps[i].id, dag));
  co_await tasks.join();
  sequence_outcome out;
  for (auto& o : dag.outcomes) {
    const auto st = o.result.status;
    if (st == step_status::completed || st == step_status::degraded) out.last_output = o.result.output;
    out.end = worse(out.end, o.next);
    if (o.waiting) out.waiting = std::move(o.waiting);
    out.results.push_back(std::move(o.result));
  }
  if (out.end == flow::next && stop.stop_requested()) out.end = flow::cancelled;
  co_return out;
}

}  // namespace arun::engine
