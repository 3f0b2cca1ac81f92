#pragma once
// How `arun` decides approval gates (docs/sessions.md, "Approvals"): a decision recorded in the
// session (by `arun approve|deny`, or earlier in this session) wins; then --yes; then a question on
// the terminal when stdin and stderr are terminals (unless --no-input); otherwise the run suspends
// (exit 5). A gate's timeout applies its default: while asking, or at a resume once the gate
// has waited that long.

#include "session/session_store.hpp"

#include <arun/run_services.hpp>

#include <boost/asio/any_io_executor.hpp>

#include "commands.hpp"

#include <arun/results.hpp>

#include <string>
#include <vector>

namespace arun::cli {

class session_approvals final : public approval_handler {
public:
  session_approvals(io::session_store& store, bool yes, bool interactive)
      : store_(store), yes_(yes), interactive_(interactive) {}

  boost::asio::awaitable<approval_reply> decide(approval_request request) override;

private:
  approval_reply record(const std::string& gate, approval_verdict verdict, const std::string& message,
                        const std::string& by);
  boost::asio::awaitable<approval_reply> ask(const approval_request& request);

  io::session_store& store_;
  bool yes_;
  bool interactive_;
  bool asking_ = false;  ///< a question is on the terminal
};

/// The gates a session waits at, from its state.json (a list; sessions written before fan-outs
/// could wait at several gates hold one object).
std::vector<pending_approval> waiting_gates(const boost::json::object& state);

struct decision_outcome {
  std::string error;                   ///< nothing was recorded when set
  std::vector<std::string> decided;    ///< the gates decided now
  std::vector<std::string> undecided;  ///< gates still waiting
};

/// `arun approve|deny`: records the decision for the chosen gates the session waits at (all of
/// them, those --step names exactly or by glob, or the only one), in one write.
decision_outcome record_decision(io::session_store& store, const decision_settings& d);

}  // namespace arun::cli
