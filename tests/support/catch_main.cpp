// Catch2's main for every arun test binary. Before any test runs it isolates the test
// from the real home (HOME, XDG_STATE_HOME, XDG_CACHE_HOME and ARUN_SESSION_DIR point into a
// fresh temp directory, removed at exit; a developer's ARUN_CACHE_DIR is dropped) and makes the process a subreaper, so that leaked
// grandchildren are re-parented to it and can be found.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "process_checks.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  std::string home_template = (std::filesystem::temp_directory_path() / "arun-test-home-XXXXXX").string();
  const char* home = ::mkdtemp(home_template.data());
  if (home == nullptr) return 2;
  ::setenv("HOME", home, 1);
  ::setenv("XDG_STATE_HOME", (std::string(home) + "/state").c_str(), 1);
  ::setenv("ARUN_SESSION_DIR", (std::string(home) + "/sessions").c_str(), 1);
  ::setenv("XDG_CACHE_HOME", (std::string(home) + "/cache").c_str(), 1);
  ::unsetenv("ARUN_CACHE_DIR");
  arun::test::become_subreaper();

  const int result = Catch::Session().run(argc, argv);

  std::error_code ec;
  std::filesystem::remove_all(home, ec);
  return result;
}
