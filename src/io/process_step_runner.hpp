#pragma once
// The real step runner: bash steps as supervised child processes.

#include "process/output_capture.hpp"
#include "step_environment.hpp"

#include <arun/step_runner.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace arun::io {

struct runner_options {
  std::string base_dir;  ///< the run's working directory (-C); relative step dirs resolve here
  std::chrono::nanoseconds kill_grace = std::chrono::seconds(5);
  capture_limits limits;
  std::vector<std::string> inherited_env;  ///< "K=V"; usually current_environment()
};

/// Bodies larger than this go through a private temp file instead of argv (SPEC §3.3).
inline constexpr std::size_t max_inline_body_bytes = 64 * 1024;

class process_step_runner final : public step_runner {
public:
  explicit process_step_runner(runner_options options)
      : options_(std::move(options)), environment_(options_.inherited_env) {}

  boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation inv) override;

private:
  runner_options options_;
  base_environment environment_;  ///< inherited + hardening, built once for every step
};

}  // namespace arun::io
