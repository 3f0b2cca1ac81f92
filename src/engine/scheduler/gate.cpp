// Approval gates (SPEC §3.5a, §8): the point where a run can suspend. Deciding (asking on a
// terminal, --yes, recorded decisions) is the host's approval_handler.
#include "scheduler/step_executor.hpp"

#include <arun/run_services.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace arun::engine {

namespace asio = boost::asio;

boost::asio::awaitable<instance_outcome> step_executor::run_gate(const step& s, scope sc, const std::string& instance,
                                                                 std::stop_token stop) {
  instance_outcome o;
  o.result.step_id = instance;
  const auto builtins = step_builtins(s, instance);
  auto prompt = render_text(s.approval.prompt, view(sc, builtins));
  warn(s, instance, prompt.warnings);
  if (!prompt.ok()) {
    o.result = unstarted(instance, step_status::failed, "step '" + instance + "': approval_prompt: " + prompt.error);
    o.next = failure_flow(s);
    co_return o;
  }
  auto asked = rs_.make_event(event_kind::approval_requested, instance, "gate");
  asked.message = prompt.text;
  rs_.emit(asked);
  approval_reply reply;
  if (rs_.options.approvals) {
    approval_request request;
    request.step = instance;
    request.prompt = prompt.text;
    request.timeout = s.approval.timeout;
    request.default_decision = s.approval.default_decision;
    asio::cancellation_signal cancel;
    std::stop_callback on_stop(stop, [&cancel] { cancel.emit(asio::cancellation_type::terminal); });
    try {
      reply = co_await asio::co_spawn(rs_.executor, rs_.options.approvals->decide(std::move(request)),
                                      asio::bind_cancellation_slot(cancel.slot(), asio::use_awaitable));
    } catch (const boost::system::system_error& e) {
      if (e.code() != asio::error::operation_aborted) throw;
      o.result.status = step_status::cancelled;
      o.result.error = "step '" + instance + "': cancelled while waiting for approval";
      o.next = flow::cancelled;
      co_return o;
    }
  }
  switch (reply.verdict) {
    case approval_verdict::approved:
      o.result.status = step_status::completed;
      o.updates["_approval_message"] = reply.message;
      break;
    case approval_verdict::denied:
      o.result.status = step_status::failed;
      o.result.error = "step '" + instance + "': approval denied" + (reply.message.empty() ? "" : ": " + reply.message);
      o.next = s.approval.on_denied == on_error_policy::fail             ? flow::fatal
               : s.approval.on_denied == on_error_policy::skip_remaining ? flow::skip_remaining
                                                                          : flow::next;
      break;
    case approval_verdict::suspend:
      o.result.status = step_status::not_run;
      o.next = flow::suspend;
      o.waiting = pending_approval{instance, prompt.text};
      break;
  }
  co_return o;
}

}  // namespace arun::engine
