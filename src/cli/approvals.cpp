#include "approvals.hpp"

#include "instance_glob.hpp"
#include "terminal_question.hpp"

#include "files/json_text.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>

namespace arun::cli {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json::object& approvals_of(json::object& state) {
  auto& v = state["approvals"];
  if (!v.is_object()) v = json::object{};
  return v.get_object();
}

void add_history(json::object& state, const std::string& gate, const std::string& what, const std::string& message,
                 const std::string& by) {
  auto& v = state["approval_history"];
  if (!v.is_array()) v = json::array{};
  v.get_array().push_back(json::object{{"gate", gate}, {"event", what}, {"message", message}, {"by", by}, {"at", now_epoch()}});
}

// Writes `verdict` for `gate` into the session state: its entry in `approvals` and a line of
// `approval_history`. A suspend records when the gate was first asked.
void write_verdict(json::object& state, const std::string& gate, approval_verdict verdict, const std::string& message,
                   const std::string& by) {
  auto& entry = approvals_of(state)[gate];
  if (!entry.is_object()) entry = json::object{};
  auto& e = entry.get_object();
  const char* word = verdict == approval_verdict::approved ? "approved" : verdict == approval_verdict::denied ? "denied" : "pending";
  e["decision"] = word;
  if (verdict == approval_verdict::suspend) {
    if (!e.contains("requested_at")) e["requested_at"] = now_epoch();
  } else {
    e["message"] = message;
    e["by"] = by;
    e["decided_at"] = now_epoch();
  }
  add_history(state, gate, verdict == approval_verdict::suspend ? "requested" : word, message, by);
}

}  // namespace

approval_reply session_approvals::record(const std::string& gate, approval_verdict verdict, const std::string& message,
                                         const std::string& by) {
  write_verdict(store_.state(), gate, verdict, message, by);
  // Queued behind the journal: other steps may be running, and a stalled disk must not stop
  // their timeouts. A failure to write stops the run (the store's failure handler).
  store_.save_state_soon();
  store_.sync();
  return approval_reply{verdict, message};
}

asio::awaitable<approval_reply> session_approvals::decide(approval_request request) {
  auto& approvals = approvals_of(store_.state());
  const auto* recorded = approvals.if_contains(request.step);
  const auto* entry = recorded && recorded->is_object() ? &recorded->get_object() : nullptr;
  if (entry) {
    const auto decision = io::string_member(*entry, "decision");
    if (decision == "approved") co_return approval_reply{approval_verdict::approved, io::string_member(*entry, "message")};
    if (decision == "denied") co_return approval_reply{approval_verdict::denied, io::string_member(*entry, "message")};
  }
  if (yes_) co_return record(request.step, approval_verdict::approved, "", "--yes");
  // A gate that already waited its timeout (since the run that first asked) takes its default.
  if (request.timeout && entry) {
    const auto* at = entry->if_contains("requested_at");
    if (at && at->is_number() && now_epoch() - at->to_number<double>() >= *request.timeout) {
      const auto verdict = request.default_decision == approval_decision::approve ? approval_verdict::approved
                                                                                  : approval_verdict::denied;
      co_return record(request.step, verdict, "approval_timeout passed", "timeout");
    }
  }
  if (interactive_) co_return co_await ask(request);
  co_return record(request.step, approval_verdict::suspend, "", "");
}

asio::awaitable<approval_reply> session_approvals::ask(const approval_request& request) {
  auto ex = co_await asio::this_coro::executor;
  // One question at a time: two DAG branches may reach gates together, and an answer must
  // go to the gate it was asked for.
  while (asking_) {
    asio::steady_timer wait(ex, std::chrono::milliseconds(50));
    co_await wait.async_wait(asio::use_awaitable);  // cancelling the run throws out of here
  }
  asking_ = true;
  struct done_asking {
    bool& flag;
    ~done_asking() { flag = false; }
  } release{asking_};
  // Until the answer: no status line drawn over the question, and the answer echoed.
  const terminal_question open_question(STDIN_FILENO, true);
  std::fprintf(stderr, "\narun: approval needed at %s:\n  %s\napprove? [y/N]%s ", request.step.c_str(),
               store_.masked(request.prompt).c_str(),
               request.timeout ? (" (" + std::to_string(static_cast<long long>(*request.timeout)) + " s, then " +
                                  (request.default_decision == approval_decision::approve ? "approve" : "deny") + ")")
                                     .c_str()
                               : "");
  std::fflush(stderr);
  // A private descriptor (close-on-exec: steps never inherit the terminal through it); asio
  // makes it non-blocking, which the shared file description keeps: restore it afterwards.
  const int flags = ::fcntl(STDIN_FILENO, F_GETFL);
  struct question {
    asio::posix::stream_descriptor in;
    bool timed_out = false;
  };
  auto q = std::make_shared<question>(question{asio::posix::stream_descriptor(ex, ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0))});
  asio::steady_timer timer(ex);
  if (request.timeout) {
    timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(*request.timeout)));
    // The handler owns the question: it may run after this coroutine has finished.
    timer.async_wait([q](const boost::system::error_code& ec) {
      if (ec) return;
      q->timed_out = true;
      q->in.cancel();
    });
  }
  std::string line;
  auto [ec, n] = co_await asio::async_read_until(q->in, asio::dynamic_buffer(line), '\n', asio::as_tuple(asio::use_awaitable));
  timer.cancel();
  if (flags >= 0) ::fcntl(STDIN_FILENO, F_SETFL, flags);
  if (q->timed_out) {
    std::fprintf(stderr, "\narun: no answer in time\n");
    const auto verdict = request.default_decision == approval_decision::approve ? approval_verdict::approved
                                                                                : approval_verdict::denied;
    co_return record(request.step, verdict, "approval_timeout passed", "timeout");
  }
  // The run was interrupted while asking: the gate is cancelled, not waiting.
  if (ec == asio::error::operation_aborted) throw boost::system::system_error(ec);
  if (ec && n == 0 && line.empty()) co_return record(request.step, approval_verdict::suspend, "", "");  // no terminal input
  std::string answer = line.substr(0, line.find('\n'));
  std::transform(answer.begin(), answer.end(), answer.begin(), [](unsigned char c) { return std::tolower(c); });
  if (answer == "y" || answer == "yes") co_return record(request.step, approval_verdict::approved, "", "terminal");
  co_return record(request.step, approval_verdict::denied, "denied at the terminal", "terminal");
}

std::vector<pending_approval> waiting_gates(const json::object& state) {
  std::vector<pending_approval> gates;
  auto add = [&](const json::value& v) {
    if (!v.is_object()) return;
    auto step = io::string_member(v.get_object(), "step");
    if (!step.empty()) gates.push_back(pending_approval{std::move(step), io::string_member(v.get_object(), "prompt")});
  };
  if (const auto* w = state.if_contains("waiting")) {
    if (const auto* list = w->if_array())
      for (const auto& v : *list) add(v);
    else
      add(*w);
  }
  return gates;
}

namespace {

std::string listed(const std::vector<pending_approval>& gates) {
  constexpr std::size_t shown = 8;
  std::string text;
  for (std::size_t i = 0; i < gates.size() && i < shown; ++i) text += (i ? ", " : "") + gates[i].step;
  if (gates.size() > shown) text += ", and " + std::to_string(gates.size() - shown) + " more";
  return text;
}

// The waiting gates `pattern` names: the one whose id it is, else those it matches as a glob.
std::vector<std::size_t> matching(const std::vector<pending_approval>& gates, const std::string& pattern) {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < gates.size(); ++i)
    if (gates[i].step == pattern) return {i};
  for (std::size_t i = 0; i < gates.size(); ++i)
    if (instance_glob_match(pattern, gates[i].step)) found.push_back(i);
  return found;
}

}  // namespace

decision_outcome record_decision(io::session_store& store, const decision_settings& d) {
  auto& state = store.state();
  decision_outcome out;
  if (io::string_member(state, "status") != "waiting_approval") {
    out.error = "session " + store.id() + " is not waiting for approval";
    return out;
  }
  const auto gates = waiting_gates(state);
  if (gates.empty()) {
    out.error = "session " + store.id() + " names no gate it waits at";
    return out;
  }
  auto& approvals = approvals_of(state);
  auto decision_of = [&](const std::string& gate) {
    const auto* entry = approvals.if_contains(gate);
    return entry && entry->is_object() ? io::string_member(entry->get_object(), "decision") : std::string();
  };
  // A gate named exactly (or the only one) must be decidable; --all and globs pass over
  // gates denied since the run stopped (a denial is final).
  enum class pick { no, exact, broad };
  std::vector<pick> chosen(gates.size(), d.all ? pick::broad : pick::no);
  if (!d.all && d.gates.empty()) {
    if (gates.size() > 1) {
      out.error = "session " + store.id() + " waits at " + std::to_string(gates.size()) + " gates (" + listed(gates) +
                  "): name them with --step INSTANCE (a glob such as '*/review' works too), or decide all with --all";
      return out;
    }
    chosen[0] = pick::exact;
  }
  for (const auto& pattern : d.gates) {
    const auto found = matching(gates, pattern);
    if (found.empty()) {
      out.error = "no gate of session " + store.id() + " matches '" + pattern + "'; it waits at " + listed(gates);
      return out;
    }
    for (auto i : found) chosen[i] = std::max(chosen[i], gates[i].step == pattern ? pick::exact : pick::broad);
  }
  for (std::size_t i = 0; i < gates.size(); ++i) {
    if (decision_of(gates[i].step) != "denied") continue;
    if (chosen[i] == pick::exact) {
      out.error = "gate " + gates[i].step + " of session " + store.id() + " was denied; a denial is final";
      return out;
    }
    chosen[i] = pick::no;
  }
  if (std::all_of(chosen.begin(), chosen.end(), [](pick p) { return p == pick::no; })) {
    out.error = "every gate of session " + store.id() + " that matches was denied already (a denial is final)";
    return out;
  }
  const std::string by = d.approve ? "arun approve" : "arun deny";
  for (std::size_t i = 0; i < gates.size(); ++i) {
    if (chosen[i] == pick::no) {
      const auto before = decision_of(gates[i].step);
      if (before != "approved" && before != "denied") out.undecided.push_back(gates[i].step);
      continue;
    }
    write_verdict(state, gates[i].step, d.approve ? approval_verdict::approved : approval_verdict::denied, d.message, by);
    out.decided.push_back(gates[i].step);
  }
  out.error = store.save_state();
  return out;
}

}  // namespace arun::cli
