// The defaults of the step_runner interface.
#include <arun/step_runner.hpp>

namespace arun {

boost::asio::awaitable<leaf_outcome> step_runner::run_agent(agent_invocation) {
  leaf_outcome o;
  o.error = "this step runner cannot run agent steps";
  co_return o;
}

bool step_runner::takes_fan_outs(const leaf_placement&) const { return false; }

leaf_identity step_runner::identity(const bash_invocation& inv) { return {inv.working_dir, {}, {}}; }

leaf_identity step_runner::identity(const agent_invocation& inv) { return {inv.working_dir, {}, {}}; }

}  // namespace arun
