// arun's composition root: parses the command line and wires io to the engine.
#include "commands.hpp"
#include "exit_codes.hpp"

#include "process_setup.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  arun::io::prepare_supervisor_process();
  try {
    return arun::cli::main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "arun: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "arun: internal error\n");
  }
  return arun::cli::exit_internal_error;
}
