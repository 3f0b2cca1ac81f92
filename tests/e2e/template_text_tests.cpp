// Template text that is not a reference, end to end (issue 34, items 4 and 5): `validate` and a
// run warn about it at its `{{`, `--strict` refuses it, a foreach that would get literal text
// is refused before anything runs; and docs/caching.md's first example, a fan-out over the
// lines of a listing, runs as written and is cached the second time.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::result_json;
using arun::test::run_arun;

namespace {

// The first ```yaml block of a docs page, as written.
std::string first_yaml_block(const std::string& page) {
  const auto text = read_text(fs::path(ARUN_SOURCE_DIR) / "docs" / page);
  const auto open = text.find("```yaml\n");
  REQUIRE(open != std::string::npos);
  const auto body = open + 8;
  return text.substr(body, text.find("```\n", body) - body);
}

}  // namespace

TEST_CASE("template text e2e: validate and a run warn at a {{ that starts no reference, --strict refuses it") {
  arun::test::temp_dir dir("arun-e2e-templates");
  const auto recipe = dir.write("shout.yaml", "name: shout\ncontext:\n  name: ada\nsteps:\n  - id: shout\n"
                                              "    command: echo \"{{ name | upper }}\"\n    output: said\n");
  const auto sessions = (dir.root / "sessions").string();
  const auto plain = run_arun({"validate", recipe}, dir.root.string());
  CHECK(plain.exit_code == 0);
  CHECK(plain.err.find("shout.yaml:6:20: warning: `{{ name | upper }}` in the command of step 'shout' is not a reference: "
                       "filters are not supported") != std::string::npos);
  CHECK(plain.err.find("\n  |                    ^^^^^^^^^^^^^^^^^^\n") != std::string::npos);
  const auto strict = run_arun({"validate", "--strict", recipe}, dir.root.string());
  CHECK(strict.exit_code == 2);
  CHECK(strict.err.find("shout.yaml:6:20: error: `{{ name | upper }}`") != std::string::npos);
  const auto ran = run_arun({recipe, "--session-dir", sessions, "--output-format", "json"}, dir.root.string());
  CHECK(ran.exit_code == 0);
  CHECK(ran.err.find("shout.yaml:6:20: warning: `{{ name | upper }}`") != std::string::npos);
  const auto refused = run_arun({recipe, "--strict", "--session-dir", sessions}, dir.root.string());
  CHECK(refused.exit_code == 2);
}

TEST_CASE("template text e2e: a foreach over literal text is refused by validate and by a run before any step") {
  arun::test::temp_dir dir("arun-e2e-templates");
  const auto marker = dir.root / "listed";
  const auto recipe = dir.write("split.yaml", "name: split\nsteps:\n  - id: list\n    command: touch " + marker.string() +
                                              "; printf 'a\\nb\\n'\n    output: files\n  - id: each\n"
                                              "    foreach: \"{{files.split('\\n')}}\"\n    command: echo {{item}}\n");
  const auto v = run_arun({"validate", recipe}, dir.root.string());
  CHECK(v.exit_code == 2);
  CHECK(v.err.find("split.yaml:7:15: error: foreach of step 'each' would get the text `{{files.split('\\n')}}`, which is "
                   "not a list") != std::string::npos);
  CHECK(v.err.find("help: to loop over the lines of a text, write foreach: {lines: \"{{files}}\"}") != std::string::npos);
  const auto r = run_arun({recipe, "--session-dir", (dir.root / "sessions").string()}, dir.root.string());
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("template text e2e: docs/caching.md's first example fans out over the lines of a listing and is cached the second time") {
  arun::test::temp_dir dir("arun-e2e-templates");
  const auto recipe = dir.write("summarize.yaml", first_yaml_block("caching.md"));
  dir.write("docs/one.md", "# One\n");
  dir.write("docs/two words.md", "# Two\n");
  const auto state = dir.root / "agent-state";
  fs::create_directories(state);
  const std::vector<std::string> agents = {"--agent-cli", "fake", "--allow-missing-agents"};
  const std::vector<std::string> env = {"FAKE_AGENT_STATE=" + state.string(), "ARUN_FAKE_AGENT=" + std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent"};
  auto arun = [&](std::vector<std::string> args) {
    args.insert(args.end(), agents.begin(), agents.end());
    args.insert(args.end(), {"--session-dir", (dir.root / "sessions").string(), "--cache-dir", (dir.root / "cache").string(),
                             "--output-format", "json"});
    return run_arun(args, dir.root.string(), std::chrono::seconds(90), env);
  };
  std::vector<std::string> validate = {"validate", recipe};
  validate.insert(validate.end(), agents.begin(), agents.end());
  CHECK(run_arun(validate, dir.root.string(), std::chrono::seconds(90), env).exit_code == 0);
  const auto first = arun({recipe});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto calls = arun::test::read_json_lines(state / "calls.jsonl");
  CHECK(calls.size() == 2);
  const auto one = result_json(first);
  REQUIRE(one.at("context").at("summaries").as_array().size() == 2);
  const auto second = arun({recipe});
  REQUIRE(second.exit_code == 0);
  CHECK(arun::test::read_json_lines(state / "calls.jsonl").size() == 2);
  CHECK(result_json(second).at("context").at("summaries") == one.at("context").at("summaries"));
  // One file edited: one call, for that file.
  dir.write("docs/one.md", "# One, edited\n");
  REQUIRE(arun({recipe}).exit_code == 0);
  CHECK(arun::test::read_json_lines(state / "calls.jsonl").size() == 3);
}
