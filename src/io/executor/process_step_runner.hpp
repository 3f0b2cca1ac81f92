#pragma once
// The real step runner: bash and agent steps as supervised child processes.

#include "agents/agent_cli.hpp"
#include "agents/agent_resolution.hpp"
#include "agents/price_table.hpp"
#include "session/transcripts.hpp"
#include "executor/local_executor.hpp"
#include "process/output_capture.hpp"
#include "executor/step_environment.hpp"
#include "executor/value_files.hpp"

#include <arun/step_runner.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <variant>
#include <string>
#include <vector>

namespace arun::io {

struct runner_options {
  std::string base_dir;  ///< the run's working directory (-C); relative step dirs resolve here
  std::chrono::nanoseconds kill_grace = std::chrono::seconds(5);
  capture_limits limits;
  std::vector<std::string> inherited_env;  ///< "K=V"; usually current_environment()
  agent_cli agent;                         ///< the CLI agent steps run (docs/agents.md, "Choosing the CLI")
  agent_search agents;                     ///< where agent references resolve (docs/agents.md, "Resolution order")
  bool allow_missing_agents = false;       ///< run without the persona (a warning) instead of failing
  executor* jobs = nullptr;                ///< where steps run; null: on this machine (local_executor)
  std::string temp_dir;                    ///< the steps' temp files (bodies, prompts, large values); empty: $TMPDIR
  /// --prices: what agent calls cost, over the CLI's own figure; null: the CLI's figure only.
  std::shared_ptr<const price_table> prices;
  /// Called after every agent call that started, with what it was asked and answered (the
  /// session's transcripts); none: not recorded.
  std::function<void(const agent_call_record&)> on_agent_call;
};

/// Bodies larger than this go through a private temp file instead of argv
/// (docs/reference/recipe.md, "Bash steps").
inline constexpr std::size_t max_inline_body_bytes = 64 * 1024;

class process_step_runner final : public step_runner {
public:
  explicit process_step_runner(runner_options options);

  boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation inv) override;
  boost::asio::awaitable<leaf_outcome> run_agent(agent_invocation inv) override;
  bool takes_fan_outs(const leaf_placement& p) const override;
  leaf_identity identity(const bash_invocation& inv) override;
  leaf_identity identity(const agent_invocation& inv) override;

private:
  /// The agent file of `reference`, resolved once per run; an error text when it cannot be.
  const std::variant<resolved_agent, std::string>& persona(const std::string& reference);
  /// The agent child's environment (docs/agents.md, "Running agent steps"): CLAUDECODE removed,
  /// AMPLIHACK_SESSION_DEPTH one deeper, AMPLIHACK_TREE_ID kept or started, the preset's variables,
  /// then the step's env.
  std::vector<std::string> agent_environment(const env_overrides& step_env) const;

  /// The job of a step, to its end, on the run's executor (on this machine for `executor:
  /// local`). What that executor cannot honour of the placement is added to `warnings`;
  /// `on_running` is called when a job that waited in a queue runs.
  /// `provider`: an agent step's (agent_cli.hpp provider_name), empty for bash.
  boost::asio::awaitable<process_result> run_job(process_spec spec, leaf_placement placement,
                                                 std::vector<std::string>& warnings, running_handler on_running,
                                                 std::string provider = {});

  runner_options options_;
  local_executor local_;
  executor& executor_;            ///< options_.jobs, else local_
  base_environment environment_;  ///< inherited + hardening, built once for every step
  value_files value_files_;       ///< by-file variables, shared between the run's steps
  std::map<std::string, std::variant<resolved_agent, std::string>, std::less<>> personas_;
  std::string tree_id_;  ///< AMPLIHACK_TREE_ID of this run's agents
  int session_depth_ = 0;  ///< AMPLIHACK_SESSION_DEPTH arun itself runs at
};

}  // namespace arun::io
