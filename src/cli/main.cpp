// arun's composition root: parses the command line and wires io to the engine.
#include "commands.hpp"
#include "exit_codes.hpp"

#include "process_setup.hpp"

#include <csignal>
#include <cstdio>
#include <system_error>
#include <exception>

int main(int argc, char** argv) {
  arun::io::prepare_supervisor_process();
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
