#include "session/git_outcome.hpp"

namespace arun::io {

git_outcome git_outcome_of(const process_result& r) {
  git_outcome g;
  g.ok = r.succeeded();
  g.out = r.out.text;
  while (!g.out.empty() && (g.out.back() == '\n' || g.out.back() == '\r')) g.out.pop_back();
  if (!r.launched()) {
    g.why = r.launch_error;
  } else if (!g.ok) {
    auto err = r.err.text;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    g.why = err.substr(err.rfind('\n') + 1);
    if (g.why.empty()) g.why = r.timed_out ? "timed out" : "exit code " + std::to_string(r.exit_code.value_or(-1));
  }
  return g;
}

}  // namespace arun::io
