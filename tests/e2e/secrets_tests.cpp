// Secrets end to end (--secret, --secret-env, a recipe's `secrets:`): steps get the real values
// (templates and environment); not one byte sequence of a value is in any file of the session,
// the events and audit files, or either output stream; resume asks for them again; an unset
// secret is a clear error. Every test checks that no process is left.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

const std::string flag_secret = "hunter2-FLAG-8812";
const std::string env_secret = "tok\"en\\ENV-5521";
const std::string recipe_secret_line = "MIIE-recipe-secret-line-0042";
const std::string sub_secret = "sub-recipe-SECRET-7781";  // known only once the sub-recipe loads
const std::string recipe_secret = "-----BEGIN KEY-----\n" + recipe_secret_line + "\n-----END KEY-----";

// The first 16 hex digits of sha256(value), for a step to check what it was given without
// the recipe (kept in the session) holding the value.
std::string digest(const std::string& value) {
  arun::test::temp_dir d{"arun-digest"};
  const auto file = d.write("v", value);
  FILE* p = ::popen(("sha256sum " + file + " | cut -c1-16").c_str(), "r");
  char buffer[64] = {};
  const auto n = std::fread(buffer, 1, sizeof buffer - 1, p);
  ::pclose(p);
  return std::string(buffer, n > 0 ? n - 1 : 0);
}

std::string check_step(const std::string& id, const std::string& expression, const std::string& value) {
  return "  - id: " + id + "\n    command: '[ \"$(printf %s \"" + expression + "\" | sha256sum | cut -c1-16)\" = " +
         digest(value) + " ]'\n";
}

std::vector<std::string> hits(const std::string& text) {
  std::vector<std::string> found;
  for (const auto* secret : {&flag_secret, &env_secret, &recipe_secret_line, &sub_secret})
    if (text.find(*secret) != std::string::npos) found.push_back(*secret);
  return found;
}

}  // namespace

TEST_CASE("secrets: steps see them, and no file of the session, no event and no output holds them") {
  arun::test::temp_dir dir{"arun-e2e-secrets"};
  const auto sessions = dir.root / "sessions", audit = dir.root / "audit", events = dir.root / "events.jsonl";
  const std::string recipe_text =
      "name: secret-everywhere\nsecrets: [PEM_KEY]\ncontext:\n  big: ''\nsteps:\n" +
      check_step("flag-in-template", "{{token}}", flag_secret) + check_step("flag-in-env", "$TOKEN", flag_secret) +
      check_step("env-in-env", "$ENV_TOKEN", env_secret) + check_step("recipe-in-env", "$PEM_KEY", recipe_secret) +
      "  - id: loud\n    command: |\n"
      "      echo \"out {{token}} $ENV_TOKEN\"\n"
      "      echo \"$PEM_KEY\" >&2\n"
      "      printf '{\"t\": \"%s\"}' \"$ENV_TOKEN\" | sed 's/\\\\/\\\\\\\\/g; s/\\\"en/\\\\\"en/'\n"
      "    output: said\n"
      "  - id: big-output\n    command: \"head -c 3000 /dev/zero | tr '\\\\0' x; echo {{token}}\"\n    output: big\n"
      "  - id: fan\n    foreach: '[1,2]'\n    as: n\n    command: \"echo {{n}} {{token}}; echo {{said}} >&2\"\n"
      "  - id: flaky\n    command: \"echo retry {{token}} >&2; exit 3\"\n    retry: {max_attempts: 2, initial_delay: 0.01}\n"
      "    on_error: continue\n"
      "  - id: gate\n    requires_approval: true\n    approval_prompt: \"ship {{token}}?\"\n"
      "  - id: last\n    command: \"echo {{big}} | tail -c 30\"\n"
      "  - id: call\n    recipe: sub.yaml\n";
  dir.write("sub.yaml", "name: sub\nsecrets: [SUB_TOKEN]\nsteps:\n  - id: inner\n    command: |\n"
                        "      echo \"sub {{SUB_TOKEN}}\"\n      echo \"$SUB_TOKEN\" >&2\n");
  const auto recipe = dir.write("secrets.yaml", recipe_text);
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "--secret", "token=" + flag_secret,
                           "--secret-env", "ENV_TOKEN", "--events", events.string(), "--audit-dir", audit.string(),
                           "--spill-outputs-over", "1000", "-y", "-v", "--output-format", "json"},
                          dir.root.string(), std::chrono::seconds(90),
                          {"ENV_TOKEN=" + env_secret, "PEM_KEY=" + recipe_secret, "SUB_TOKEN=" + sub_secret});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto result = arun::test::result_json(r);
  CHECK(result.at("status") == "completed");
  // Every step that checks its value passed: they got the real secrets.
  for (const auto& s : result.at("step_results").as_array())
    if (s.at("step_id").as_string().starts_with("flag-") || s.at("step_id").as_string().ends_with("-in-env"))
      CHECK(s.at("status") == "completed");
  CHECK(hits(r.out).empty());
  CHECK(hits(r.err).empty());
  CHECK(r.err.find("out *** ***") != std::string::npos);  // masked, not dropped
  CHECK(r.err.find("call/inner | sub ***") != std::string::npos);
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.root)) {
    if (entry.path().filename() == "secrets.yaml") continue;  // the user's own recipe: no values in it
    const auto mode = fs::status(entry).permissions();
    if (entry.path().string().starts_with(sessions.string() + "/")) {
      if (entry.is_directory())
        CHECK((mode & fs::perms::all) == fs::perms::owner_all);
      else
        CHECK((mode & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
    }
    if (!entry.is_regular_file()) continue;
    ++files;
    INFO(entry.path());
    CHECK(hits(read_text(entry.path())).empty());
  }
  CHECK(files > 15);  // the session's files, its logs and outputs, the events and audit files
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: resume asks the same sources again and never finds a value in the session") {
  arun::test::temp_dir dir{"arun-e2e-secrets-resume"};
  const auto sessions = dir.root / "sessions";
  const auto go = dir.root / "go";
  const auto recipe = dir.write("resume.yaml", "name: secret-resume\nsteps:\n"
                                               "  - id: wait\n    command: '[ -e " + go.string() + " ]'\n" +
                                                   check_step("later", "{{token}}", flag_secret) +
                                                   check_step("env", "$ENV_TOKEN", env_secret));
  const std::vector<std::string> env = {"ENV_TOKEN=" + env_secret};
  const auto first = run_arun({recipe, "--session-dir", sessions.string(), "--secret", "token=" + flag_secret,
                               "--secret-env", "ENV_TOKEN", "-q"},
                              dir.root.string(), std::chrono::seconds(60), env);
  CHECK(first.exit_code == 1);
  std::string id;
  for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
  REQUIRE_FALSE(id.empty());
  std::ofstream(go) << "go";
  const auto missing = run_arun({"resume", id, "--session-dir", sessions.string(), "-q"}, dir.root.string(),
                                std::chrono::seconds(60), env);
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("was run with --secret token, which is never stored; give it again: arun resume " + id +
                         " --secret token=VALUE") != std::string::npos);
  const auto unset = run_arun({"resume", id, "--session-dir", sessions.string(), "-q", "--secret", "token=" + flag_secret},
                              dir.root.string(), std::chrono::seconds(60), {"ENV_TOKEN"});
  CHECK(unset.exit_code == 2);
  CHECK(unset.err.find("$ENV_TOKEN is not set") != std::string::npos);
  const auto resumed = run_arun({"resume", id, "--session-dir", sessions.string(), "-q", "--secret", "token=" + flag_secret,
                                 "--output-format", "json"},
                                dir.root.string(), std::chrono::seconds(60), env);
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(arun::test::result_json(resumed).at("status") == "completed");
  for (const auto& entry : fs::recursive_directory_iterator(sessions))
    if (entry.is_regular_file()) CHECK(hits(read_text(entry.path())).empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: an unset recipe secret stops the run before anything runs; validate does not need it") {
  arun::test::temp_dir dir{"arun-e2e-secrets-unset"};
  const auto recipe = dir.write("unset.yaml", "name: unset\nsecrets:\n  - OTHER\n  - DEPLOY_TOKEN\nsteps:\n"
                                              "  - id: use\n    command: echo {{DEPLOY_TOKEN}}\n");
  const auto r = run_arun({recipe, "--session-dir", (dir.root / "s").string()}, dir.root.string(),
                          std::chrono::seconds(60), {"DEPLOY_TOKEN", "OTHER=set"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("unset.yaml:4:5: error: secret 'DEPLOY_TOKEN'") != std::string::npos);
  CHECK(r.err.find("secret 'DEPLOY_TOKEN' is not set: the recipe takes it from $DEPLOY_TOKEN") != std::string::npos);
  CHECK(r.err.find("export DEPLOY_TOKEN=… or pass --secret DEPLOY_TOKEN=VALUE") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.root / "s"));
  const auto v = run_arun({"validate", recipe}, dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN"});
  CHECK(v.exit_code == 0);
  const auto bad = run_arun({recipe, "--secret", "9bad=x", "--session-dir", (dir.root / "s").string()},
                            dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN=x", "OTHER=set"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("'--secret 9bad=…' must be KEY=VALUE with KEY a variable name") != std::string::npos);
  CHECK(bad.err.find("9bad=x") == std::string::npos);
  // A --secret without '=' may be the value itself: never repeated.
  const auto no_key = run_arun({recipe, "--secret", "just-the-value-1234", "--session-dir", (dir.root / "s").string()},
                               dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN=x", "OTHER=set"});
  CHECK(no_key.exit_code == 2);
  CHECK(no_key.err.find("a --secret value has no '=': it must be KEY=VALUE") != std::string::npos);
  CHECK(no_key.err.find("just-the-value-1234") == std::string::npos);
  // One to three characters would mask those characters everywhere.
  const auto short_secret = run_arun({recipe, "--secret", "pin=123", "--session-dir", (dir.root / "s").string()},
                                     dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN=long-enough", "OTHER=set"});
  CHECK(short_secret.exit_code == 2);
  CHECK(short_secret.err.find("secret 'pin' is shorter than 4 characters: too short to mask") != std::string::npos);
}
