// Approval gates (docs/reference/recipe.md, "Approval gates"; docs/sessions.md, "Approvals"): the
// points where a run can suspend — pure gate steps, steps with `requires_approval` before their
// body, and stage approvals. Deciding (asking on a terminal, --yes, decisions recorded by
// `arun approve`) is the host's approval_handler.
#include "scheduler/step_executor.hpp"

#include "template/reference.hpp"

#include <arun/run_services.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <set>

namespace arun::engine {

namespace asio = boost::asio;

asio::awaitable<std::optional<approval_reply>> step_executor::decide_approval(approval_request request,
                                                                              std::string_view type,
                                                                              std::stop_token stop) {
  auto asked = rs_.make_event(event_kind::approval_requested, request.step, type);
  asked.message = request.prompt;
  rs_.emit(asked);
  if (!rs_.options.approvals) co_return approval_reply{};  // no handler: every gate suspends
  asio::cancellation_signal cancel;
  std::stop_callback on_stop(stop, [&cancel] { cancel.emit(asio::cancellation_type::terminal); });
  try {
    co_return co_await asio::co_spawn(rs_.executor, rs_.options.approvals->decide(std::move(request)),
                                      asio::bind_cancellation_slot(cancel.slot(), asio::use_awaitable));
  } catch (const boost::system::system_error& e) {
    if (e.code() != asio::error::operation_aborted) throw;
  }
  co_return std::nullopt;  // the run was stopped while the gate waited
}

asio::awaitable<instance_outcome> step_executor::run_gate(const step& s, scope sc, const std::string& instance,
                                                          std::stop_token stop) {
  const auto builtins = step_builtins(s, instance);
  auto prompt = render_text(s.approval.prompt, view(sc, builtins));
  warn(s, instance, prompt.warnings);
  if (!prompt.ok()) co_return failed_before_start(s, instance, "approval_prompt: " + prompt.error, rs_.options.keep_going);
  instance_outcome o;
  o.result.step_id = instance;
  // g++ 12 miscompiles a temporary built inside a co_await expression: name it first.
  approval_request request{instance, prompt.text, s.approval.timeout, s.approval.default_decision};
  const auto reply = co_await decide_approval(std::move(request), "gate", stop);
  if (!reply) {
    o.result.status = step_status::cancelled;
    o.result.error = "step '" + instance + "': cancelled while waiting for approval";
    o.next = flow::cancelled;
    co_return o;
  }
  switch (reply->verdict) {
    case approval_verdict::approved:
      o.result.status = step_status::completed;
      o.updates["_approval_message"] = reply->message;
      break;
    case approval_verdict::denied:
      o.result.status = step_status::failed;
      o.result.error = "step '" + instance + "': approval denied" + (reply->message.empty() ? "" : ": " + reply->message);
      o.next = s.approval.on_denied == on_error_policy::fail             ? flow::fatal
               : s.approval.on_denied == on_error_policy::skip_remaining ? flow::skip_remaining
                                                                          : flow::next;
      if (o.next == flow::fatal) rs_.denied.emplace_back(instance, o.result.error);
      break;
    case approval_verdict::suspend:
      o.result.status = step_status::not_run;
      o.next = flow::suspend;
      o.waiting.push_back(pending_approval{instance, prompt.text});
      break;
  }
  co_return o;
}

asio::awaitable<instance_outcome> step_executor::run_approved(const step& s, scope sc, const std::string& instance,
                                                              std::stop_token stop) {
  auto gate = co_await run_gate(s, sc, instance, stop);
  if (gate.result.status != step_status::completed) co_return gate;
  // The body sees {{_approval_message}}; the journal records it with the step's delta.
  const auto message = gate.updates.at("_approval_message");
  sc.target()["_approval_message"] = message;
  auto o = co_await run_body_after_gate(s, sc, instance, stop);
  o.updates["_approval_message"] = message;
  co_return o;
}

bool stage_gate_after(const stage& st, const recipe& r) {
  if (st.approval.when != gate_timing::automatic) return st.approval.when == gate_timing::after;
  // docs/reference/recipe.md, "Stages": after the stage when the prompt needs outputs only the
  // stage's own steps produce.
  std::set<std::string, std::less<>> own, elsewhere;
  for (const auto& kv : r.context) elsewhere.emplace(kv.key());
  auto collect = [](const std::vector<step>& steps, std::set<std::string, std::less<>>& into) {
    std::vector<const std::vector<step>*> pending = {&steps};
    while (!pending.empty()) {
      const auto* list = pending.back();
      pending.pop_back();
      for (const auto& s : *list) {
        if (s.output) into.insert(*s.output);
        if (s.foreach && s.foreach->collect) into.insert(*s.foreach->collect);
        if (!s.steps.empty()) pending.push_back(&s.steps);
      }
    }
  };
  for (const auto& other : r.stages) collect(other.steps, &other == &st ? own : elsewhere);
  for (const auto& span : find_references(st.approval.prompt))
    if (own.contains(span.ref.root) && !elsewhere.contains(span.ref.root)) return true;
  return false;
}

asio::awaitable<std::optional<sequence_outcome>> step_executor::run_stage_gate(const stage& st, scope sc,
                                                                               const std::string& prefix,
                                                                               std::stop_token stop) {
  const std::string instance = prefix + "stage:" + st.name;
  auto prompt = render_text(st.approval.prompt, view(sc, frame_.builtins));
  rs_.warn(instance, prompt.warnings, "stage");
  sequence_outcome out;
  if (!prompt.ok()) {
    out.end = flow::fatal;
    out.error = "stage '" + st.name + "': approval prompt: " + prompt.error;
    co_return out;
  }
  approval_request request{instance, prompt.text, st.approval.timeout, st.approval.default_decision};
  const auto reply = co_await decide_approval(std::move(request), "stage", stop);
  if (!reply) {
    out.end = flow::cancelled;
    co_return out;
  }
  switch (reply->verdict) {
    case approval_verdict::approved:
      sc.target()["_approval_message"] = reply->message;
      co_return std::nullopt;  // go on
    case approval_verdict::denied:
      out.end = flow::fatal;
      out.error = "stage '" + st.name + "': approval denied" + (reply->message.empty() ? "" : ": " + reply->message);
      rs_.denied.emplace_back(instance, out.error);
      break;
    case approval_verdict::suspend:
      out.end = flow::suspend;
      out.waiting.push_back(pending_approval{instance, prompt.text});
      break;
  }
  co_return out;
}

}  // namespace arun::engine
