// What a run writes stays bounded by what it keeps, not by what its steps print.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using arun::test::run_arun;

TEST_CASE("a step printing 10 MB of short lines and 2 MB of long ones leaves a small events file") {
  arun::test::temp_dir dir{"arun-e2e-bounds"};
  const auto file = dir.write("loud.yaml", "name: loud\nsteps:\n"
                                           "  - id: yes\n    command: yes | head -c 10000000\n"
                                           "  - id: wide\n    command: \"for i in $(seq 256); do head -c 8192 /dev/zero | tr '\\\\0' w; echo; done\"\n");
  const auto sessions = dir.root / "sessions";
  const auto events = dir.root / "events.jsonl";
  const auto r = run_arun({file, "--session-dir", sessions.string(), "--events", events.string(), "-q"}, dir.root.string());
  CHECK(r.exit_code == 0);
  const auto session = fs::directory_iterator(sessions)->path();
  for (const auto& path : {session / "events.jsonl", events}) {
    INFO(path);
    CHECK(fs::file_size(path) < 2'000'000);  // before: 830 MB for the first step alone
    std::ifstream in(path);
    int warnings = 0;
    for (std::string line; std::getline(in, line);) {
      const auto o = boost::json::parse(line).as_object();
      if (o.at("event") == "warning") {
        ++warnings;
        CHECK_THAT(std::string(o.at("message").as_string()), Catch::Contains("left out of the events"));
      }
    }
    CHECK(warnings == 2);
  }
  CHECK(arun::test::leftover_processes().empty());
}
