// arun's composition root: parses the command line and wires io to the engine.
#include "commands.hpp"
#include "exit_codes.hpp"

#include "process/step_containment.hpp"
#include "process/process_setup.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <exception>

namespace {

// Ends the step containment however main is left: escaped processes killed, cgroups removed.
struct containment_scope {
  ~containment_scope() { arun::io::end_step_containment(); }
};

}  // namespace

int main(int argc, char** argv) {
  arun::io::prepare_supervisor_process();
  const char* containment = std::getenv("ARUN_CONTAINMENT");
  const auto request = arun::io::parse_containment_request(containment != nullptr ? containment : "auto");
  if (!request) {
    std::fprintf(stderr, "arun: ARUN_CONTAINMENT=%s is not one of: auto, cgroup, subreaper, group\n", containment);
    return arun::cli::exit_usage;
  }
  arun::io::enable_step_containment(*request);
  containment_scope contained;
  try {
    return arun::cli::main(argc, argv);
  } catch (const std::system_error& e) {
    // stdout closed early (`arun list | head`): end quietly, as a SIGPIPE'd tool would.
    if (e.code() == std::errc::broken_pipe) return 128 + SIGPIPE;
    std::fprintf(stderr, "arun: internal error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "arun: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "arun: internal error\n");
  }
  return arun::cli::exit_internal_error;
}
