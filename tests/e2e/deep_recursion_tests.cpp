// A recipe that calls itself 200 levels deep: its journal grows with the instances that
// finish, not with their depth; a signal stops it within the kill grace; resume restores
// a replayed sub-recipe's nested results from the children's own records.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

fs::path only_session(const fs::path& root) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(root)) found.push_back(e.path());
  REQUIRE(found.size() == 1);
  return found[0];
}

std::size_t line_count(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
  return n;
}

json::value parse_deep(const std::string& text) {
  json::parse_options options;
  options.max_depth = 10000;  // a result nests a level per sub-recipe call
  return json::parse(text, {}, options);
}

// How deep the first child chain of a result goes.
int nesting(const json::value& step) {
  const auto* children = step.as_object().if_contains("children");
  if (!children || children->as_array().empty()) return 0;
  int deepest = 0;
  for (const auto& c : children->as_array()) deepest = std::max(deepest, nesting(c));
  return deepest + 1;
}

}  // namespace

TEST_CASE("a failing 200-deep recursion keeps a journal linear in its instances") {
  temp_dir dir{"arun-e2e-deep"};
  const auto file = dir.write("deep.yaml",
                              "name: deep\nrecursion: {max_depth: 200}\nsteps:\n"
                              "  - id: work\n    command: echo level\n"
                              "  - id: down\n    recipe: deep.yaml\n");
  const auto sessions = dir.root / "sessions";
  const auto r = run_arun({file, "--session-dir", sessions.string(), "--output-format", "json", "-q"}, dir.root.string());
  CHECK(r.exit_code == 1);
  const auto error = std::string(parse_deep(r.out).at("step_results").at(1).at("error").as_string());
  CHECK_THAT(error, Catch::EndsWith("recursion depth limit 200 reached: deep \u00d7202"));
  CHECK(error.size() < 2000);  // the deepest instance id (1,000 bytes) and the cause, once
  const auto journal = only_session(sessions) / "journal.jsonl";
  const auto records = line_count(journal);
  CHECK(records == 402);  // work and down at each of 201 levels
  // Each record holds its instance id, at most its children's ids and the error once: a few
  // instance ids' worth, never its subtree (before: 70 MB, records of up to 1.4 MB).
  const auto longest_id = 4 + 5 * 200;
  CHECK(fs::file_size(journal) < records * (6 * longest_id + 2048));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("SIGTERM stops a deep recursion within the kill grace") {
  temp_dir dir{"arun-e2e-deep-term"};
  const auto file = dir.write("deep.yaml",
                              "name: deep\nrecursion: {max_depth: 200}\nsteps:\n"
                              "  - id: work\n    command: sleep 0.02\n"
                              "  - id: down\n    recipe: deep.yaml\n");
  const auto sessions = dir.root / "sessions";
  arun::test::background_arun arun({file, "--session-dir", sessions.string(), "-q"}, dir.root);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto sent = std::chrono::steady_clock::now();
  ::kill(arun.pid, SIGTERM);
  CHECK(arun.wait_exit(std::chrono::seconds(30)) == 143);
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds(5));  // the default kill grace
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("resume restores the nested results of a replayed sub-recipe from its children's records") {
  temp_dir dir{"arun-e2e-deep-resume"};
  // 30 levels down and back, then a slow last step to kill arun in.
  const auto file = dir.write("deep.yaml",
                              "name: deep\nrecursion: {max_depth: 40}\ncontext: {level: 0, top: true}\nsteps:\n"
                              "  - id: next\n    command: echo $(( {{level}} + 1 ))\n    output: next\n"
                              "  - id: down\n    condition: \"next < 30\"\n    recipe: deep.yaml\n"
                              "    context: {level: \"{{next}}\", top: false}\n"
                              "  - id: slow\n    condition: \"top\"\n"
                              "    command: while [ ! -e '" + (dir.root / "release").string() + "' ]; do sleep 0.05; done\n");
  const auto sessions = dir.root / "sessions";
  {
    arun::test::background_arun arun({file, "--session-dir", sessions.string(), "-q"}, dir.root);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (fs::exists(sessions) && !fs::is_empty(sessions) &&
          arun::test::read_text(only_session(sessions) / "journal.jsonl").find("\"instance\":\"down\"") != std::string::npos)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(arun.pid, SIGKILL);
    CHECK(arun.wait_exit(std::chrono::seconds(10)) == 128 + SIGKILL + 1000);
  }
  const auto id = only_session(sessions).filename().string();
  dir.write("release", "");  // the killed arun's waiting step is an orphan now: let it end
  CHECK(arun::test::leftover_processes(std::chrono::milliseconds(5000)).empty());
  const auto r = run_arun({"resume", id, "--session-dir", sessions.string(), "--output-format", "json", "-q",
                           "--set", "top=false"},
                          dir.root.string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto down = parse_deep(r.out).at("step_results").at(1);
  CHECK(down.at("status") == "completed");
  CHECK(nesting(down) == 29);  // levels 1..29 each hold their own down step
  CHECK(arun::test::leftover_processes().empty());
}
