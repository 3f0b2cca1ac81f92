#pragma once
// The local executor: a job is a child of arun, run by the supervisor.

#include "executor/executor.hpp"

namespace arun::io {

class local_executor final : public executor {
public:
  std::string_view name() const noexcept override { return "local"; }
  executor_caps caps() const noexcept override { return {}; }
  boost::asio::awaitable<process_result> run(job_spec job) override;
  void emergency_stop() noexcept override { kill_all_supervised_processes(); }
};

}  // namespace arun::io
