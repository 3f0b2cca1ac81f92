#include "executor/local_executor.hpp"

namespace arun::io {

boost::asio::awaitable<process_result> local_executor::run(job_spec job) {
  // A local child dies with arun (step containment), so there is never a job to adopt, and
  // the machine's resources are what they are: `resources` is the scheduler's concern.
  co_return co_await run_process(std::move(job.process));
}

}  // namespace arun::io
