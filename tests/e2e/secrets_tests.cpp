// Secrets end to end (--secret KEY[=VALUE], --secret-file, --secret-env, a recipe's `secrets:`):
// steps get the real values (templates and environment); no form of a value the masker masks is
// in any file of the session or the cache, the events and audit files, either output stream,
// arun's or an agent's command line, nor a piece of one at a cut; resume asks for them again;
// an unset secret is a clear error. Every test checks that no process is left.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/serialize.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
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
  // The flag's value is a --set value too: the command line a session records and its
  // origin.json are masked like every other file.
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "--secret", "token=" + flag_secret,
                           "--set", "also=" + flag_secret,
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
  // The report of the session (checked with every other file below).
  const auto report = run_arun({"report", "last", "--session-dir", sessions.string(), "-o",
                                (dir.root / "report.html").string()},
                               dir.root.string());
  CHECK(report.exit_code == 0);
  CHECK(read_text(dir.root / "report.html").find("token=***") != std::string::npos);
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
                         " --secret token (then type or pipe the value), or --secret-file token=PATH") !=
        std::string::npos);
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

TEST_CASE("secrets: an unset recipe secret stops the run before anything runs, validate does not need it") {
  arun::test::temp_dir dir{"arun-e2e-secrets-unset"};
  const auto recipe = dir.write("unset.yaml", "name: unset\nsecrets:\n  - OTHER\n  - DEPLOY_TOKEN\nsteps:\n"
                                              "  - id: use\n    command: echo {{DEPLOY_TOKEN}}\n");
  const auto r = run_arun({recipe, "--session-dir", (dir.root / "s").string()}, dir.root.string(),
                          std::chrono::seconds(60), {"DEPLOY_TOKEN", "OTHER=set"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("unset.yaml:4:5: error: secret 'DEPLOY_TOKEN'") != std::string::npos);
  CHECK(r.err.find("secret 'DEPLOY_TOKEN' is not set: the recipe takes it from $DEPLOY_TOKEN") != std::string::npos);
  CHECK(r.err.find("export DEPLOY_TOKEN=…, or pass --secret DEPLOY_TOKEN (read from stdin) or --secret-file "
                   "DEPLOY_TOKEN=PATH") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.root / "s"));
  const auto v = run_arun({"validate", recipe}, dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN"});
  CHECK(v.exit_code == 0);
  const auto bad = run_arun({recipe, "--secret", "9bad=x", "--session-dir", (dir.root / "s").string()},
                            dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN=x", "OTHER=set"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("'--secret 9bad=…' must be KEY=VALUE with KEY a variable name") != std::string::npos);
  CHECK(bad.err.find("9bad=x") == std::string::npos);
  // A --secret without '=' that is no name may be the value itself: never repeated.
  const auto no_key = run_arun({recipe, "--secret", "just-the-value-1234", "--session-dir", (dir.root / "s").string()},
                               dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN=x", "OTHER=set"});
  CHECK(no_key.exit_code == 2);
  CHECK(no_key.err.find("a --secret argument must be KEY (the value is read from stdin) or KEY=VALUE") !=
        std::string::npos);
  CHECK(no_key.err.find("just-the-value-1234") == std::string::npos);
  // One to three characters would mask those characters everywhere.
  const auto short_secret = run_arun({recipe, "--secret", "pin=123", "--session-dir", (dir.root / "s").string()},
                                     dir.root.string(), std::chrono::seconds(60), {"DEPLOY_TOKEN=long-enough", "OTHER=set"});
  CHECK(short_secret.exit_code == 2);
  CHECK(short_secret.err.find("secret 'pin' is shorter than 4 characters: too short to mask") != std::string::npos);
}

// Issue 33, trust rule 6: a secret never reaches disk or another process in any form the
// masker masks (docs/watching.md#secrets, docs/security.md#secrets).
namespace {

const std::string pem_line_1 = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW";
const std::string pem_line_2 = "QyNTUxOQAAACB/hx+k2Z3fHk7cq1ZkZyE4m9v0yWJX2d4u8rE7mBvqFgAAAJgq6m1yKupt";
const std::string pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem_line_1 + "\n" + pem_line_2 +
                        "\n-----END OPENSSH PRIVATE KEY-----";

// Every regular file below `root`, as (path, bytes).
std::vector<std::pair<fs::path, std::string>> files_below(const fs::path& root) {
  std::vector<std::pair<fs::path, std::string>> out;
  if (!fs::exists(root)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) out.emplace_back(entry.path(), read_text(entry.path()));
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// A piece of `secret` of 8 bytes or more in `text` (the tests' filler never holds one).
std::string fragment_in(const std::string& text, const std::string& secret) {
  for (std::size_t at = 0; at + 8 <= secret.size(); ++at)
    if (text.find(secret.substr(at, 8)) != std::string::npos) return secret.substr(at, 8);
  return {};
}

}  // namespace

TEST_CASE("secrets: the cache keeps no output holding a line, the JSON form or the CRLF form of a secret") {
  arun::test::temp_dir dir{"arun-e2e-secret-cache"};
  const auto sessions = dir.root / "sessions", cache = dir.root / "cache";
  const auto recipe = dir.write("cache.yaml", "name: secret-cache\nsteps:\n"
                                              "  - id: one-line\n    command: printf '%s\\n' \"$PEM\" | sed -n 3p\n"
                                              "    cache: {}\n"
                                              "  - id: json-form\n    command: printf '%s' \"$PEM\" | awk '{printf \"%s\\\\n\", $0}'\n"
                                              "    cache: {}\n"
                                              "  - id: crlf-form\n    command: printf '%s\\n' \"$PEM\" | sed 's/$/\\r/'\n"
                                              "    cache: {}\n"
                                              "  - id: harmless\n    command: echo nothing secret\n    cache: {}\n");
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "--cache-dir", cache.string(), "--secret-env",
                           "PEM", "-v"},
                          dir.root.string(), std::chrono::seconds(60), {"PEM=" + pem});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::size_t warnings = 0;
  for (auto at = r.err.find("not kept in the cache"); at != std::string::npos; at = r.err.find("not kept in the cache", at + 1))
    ++warnings;
  CHECK(warnings == 3);
  // The forms a step can print: each line, the value with LF, CRLF, and as JSON escapes it.
  const std::vector<std::string> forms = {pem_line_1, pem_line_2, pem, replaced(pem, "\n", "\r\n"),
                                          replaced(pem, "\n", "\\n"), replaced(replaced(pem, "/", "\\/"), "\n", "\\n")};
  std::size_t cached = 0;
  for (const auto& [path, text] : files_below(cache)) {
    ++cached;
    INFO(path);
    for (const auto& form : forms) CHECK(text.find(form) == std::string::npos);
  }
  CHECK(cached >= 1);  // the harmless step's entry: the cache was written
  for (const auto& [path, text] : files_below(sessions)) {
    INFO(path);
    for (const auto& form : forms) CHECK(text.find(form) == std::string::npos);
  }
  // Stored nowhere, so a second run runs all three again (and takes the harmless one).
  const auto again = run_arun({recipe, "--session-dir", sessions.string(), "--cache-dir", cache.string(),
                               "--secret-env", "PEM", "--output-format", "json"},
                              dir.root.string(), std::chrono::seconds(60), {"PEM=" + pem});
  std::size_t hits_now = 0;
  const auto second = arun::test::result_json(again);
  for (const auto& s : second.at("step_results").as_array())
    if (s.as_object().if_contains("cached") && s.at("cached").as_bool()) ++hits_now;
  CHECK(hits_now == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: a secret printed as a JSON key is masked in state.json, the journal and the JSON result") {
  arun::test::temp_dir dir{"arun-e2e-secret-key"};
  const auto sessions = dir.root / "sessions";
  const std::string token = "tok-KEY-0123456789";
  const auto recipe = dir.write("key.yaml", "name: secret-key\nsteps:\n"
                                            "  - id: keyed\n    command: |\n      printf '{\"%s\": 1, \"n\": 2}' \"$TOKEN\"\n"
                                            "    parse_json: true\n    output: keyed\n"
                                            "  - id: nested\n    command: |\n"
                                            "      printf '[{\"a %s\": {\"%s\": 3} }]' \"$TOKEN\" \"$TOKEN\"\n"
                                            "    parse_json: true\n    output: nested\n");
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "--secret-env", "TOKEN", "--output-format", "json"},
                          dir.root.string(), std::chrono::seconds(60), {"TOKEN=" + token});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find(token) == std::string::npos);
  CHECK(r.out.find("\"***\"") != std::string::npos);  // masked, not dropped
  std::size_t checked = 0;
  for (const auto& [path, text] : files_below(sessions)) {
    const auto name = path.filename().string();
    if (name == "state.json" || name == "journal.jsonl") ++checked;
    INFO(path);
    CHECK(text.find(token) == std::string::npos);
  }
  CHECK(checked == 2);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: --secret KEY reads the value from stdin, never from arun's command line") {
  arun::test::temp_dir dir{"arun-e2e-secret-stdin"};
  const std::string value = "stdin-SECRET-44731";
  const auto sessions = dir.root / "sessions", mark = dir.root / "mark", go = dir.root / "go";
  const auto input = dir.write("input", value + "\n");
  // The step waits for `go`, so arun is surely running while its command line is read.
  const auto recipe = dir.write("stdin.yaml", "name: secret-stdin\nsteps:\n" + check_step("got", "$TOKEN", value) +
                                                  "  - id: wait\n    command: touch " + mark.string() +
                                                  "; while [ ! -e " + go.string() + " ]; do sleep 0.05; done\n");
  arun::test::background_arun arun({recipe, "--session-dir", sessions.string(), "--secret", "TOKEN"}, dir.root, {},
                                   input);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(mark) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(fs::exists(mark));
  // What `ps` shows of arun while the run goes on.
  const auto cmdline = read_text("/proc/" + std::to_string(arun.pid) + "/cmdline");
  CHECK(cmdline.find("TOKEN") != std::string::npos);
  CHECK(cmdline.find(value) == std::string::npos);
  std::ofstream(go) << "go";
  const auto code = arun.wait_exit(std::chrono::seconds(60));
  const auto err = read_text(arun.err);
  INFO(err);
  CHECK(code == 0);  // the step `got` saw the value
  CHECK(err.find(value) == std::string::npos);
  for (const auto& [path, text] : files_below(sessions)) CHECK(text.find(value) == std::string::npos);
  // No line on stdin: a clear error, nothing runs.
  const auto empty = run_arun({recipe, "--session-dir", sessions.string(), "--secret", "TOKEN"}, dir.root.string(),
                              std::chrono::seconds(60));
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("--secret TOKEN: stdin is closed or empty") != std::string::npos);
  // KEY=VALUE still works, with a word on `ps`.
  const auto flag = run_arun({recipe, "--session-dir", sessions.string(), "--secret", "TOKEN=" + value},
                             dir.root.string(), std::chrono::seconds(60));
  CHECK(flag.exit_code == 0);
  CHECK(flag.err.find("warning: --secret TOKEN=… puts the value in arun's command line") != std::string::npos);
  CHECK(flag.err.find(value) == std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: --secret-file reads a file (one newline trimmed), warns when others can read it, and a "
          "resume reads it again") {
  arun::test::temp_dir dir{"arun-e2e-secret-file"};
  const std::string value = "file-SECRET-90210";
  const auto sessions = dir.root / "sessions", go = dir.root / "go";
  const auto file = dir.write("token", value + "\n");
  ::chmod(file.c_str(), 0644);
  const auto recipe = dir.write("file.yaml", "name: secret-file\nsteps:\n" + check_step("got", "$TOKEN", value) +
                                                 "  - id: wait\n    command: '[ -e " + go.string() + " ]'\n" +
                                                 check_step("later", "{{TOKEN}}", value));
  const auto first = run_arun({recipe, "--session-dir", sessions.string(), "--secret-file", "TOKEN=" + file},
                              dir.root.string(), std::chrono::seconds(60));
  INFO(first.err);
  CHECK(first.exit_code == 1);  // `got` passed, `wait` failed
  CHECK(first.err.find("'" + file + "' has mode 0644: group or others can read or change the secret; chmod 600") !=
        std::string::npos);
  std::string id;
  for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
  REQUIRE_FALSE(id.empty());
  std::ofstream(go) << "go";
  ::chmod(file.c_str(), 0600);
  const auto resumed = run_arun({"resume", id, "--session-dir", sessions.string()}, dir.root.string(),
                                std::chrono::seconds(60));
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.err.find("has mode") == std::string::npos);
  for (const auto& [path, text] : files_below(sessions)) CHECK(text.find(value) == std::string::npos);
  const auto missing = run_arun({recipe, "--session-dir", sessions.string(), "--secret-file", "TOKEN=" + file + ".nope"},
                                dir.root.string(), std::chrono::seconds(60));
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("--secret-file TOKEN: cannot read '" + file + ".nope': No such file or directory") !=
        std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: no cut (64 KiB lines, --max-output, the failure snippet) leaves a piece of a secret on disk") {
  arun::test::temp_dir dir{"arun-e2e-secret-cuts"};
  const std::string secret = "QZ7XW9KP3LM5RT8VN2";  // no letter of the filler
  const auto sessions = dir.root / "sessions", events = dir.root / "events.jsonl";
  auto fill = [](char c, std::size_t n) {
    return "head -c " + std::to_string(n) + " /dev/zero | tr '\\0' " + std::string(1, c);
  };
  // 12 bytes of the secret before each cut: 64 KiB (a line), 100000 (--max-output); and the
  // failure snippet's 8 KiB tail starting 4 bytes into it.
  const auto recipe = dir.write(
      "cuts.yaml",
      "name: secret-cuts\nsteps:\n"
      "  - id: long-line\n    command: |\n"
      "      " + fill('a', 65536 - 12) + "; printf %s \"$SEC\"; " + fill('b', 30) + "; echo\n"
      "      " + fill('a', 65536 - 12) + " >&2; printf %s \"$SEC\" >&2; echo >&2\n"
      "  - id: big\n    command: |\n"
      "      " + fill('a', 100000 - 12) + "; printf %s \"$SEC\"; " + fill('b', 300) + "\n"
      "    output: big\n"
      "  - id: snippet\n    command: |\n"
      "      " + fill('a', 100) + " >&2; printf %s \"$SEC\" >&2\n"
      "      " + fill('b', 8192 - 1 - (secret.size() - 4)) + " >&2; echo >&2; exit 1\n"
      "    on_error: continue\n");
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "--secret-env", "SEC", "--max-output", "100000",
                           "--events", events.string(), "-v", "--output-format", "json"},
                          dir.root.string(), std::chrono::seconds(90), {"SEC=" + secret});
  INFO(r.err.substr(0, 2000));
  CHECK(r.exit_code == 0);
  CHECK(fragment_in(r.out, secret).empty());
  CHECK(fragment_in(r.err, secret).empty());
  std::size_t files = 0;
  for (const auto& [path, text] : files_below(dir.root)) {
    if (path.extension() == ".yaml") continue;
    ++files;
    INFO(path);
    CHECK(fragment_in(text, secret).empty());
  }
  CHECK(files >= 5);  // state.json, the journal, the logs, the events
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("secrets: an agent CLI's argv never holds a secret: copilot's prompt goes by file, a secret model fails") {
  arun::test::temp_dir dir{"arun-e2e-secret-argv"};
  const std::string token = "agent-SECRET-77120";
  const auto root = dir.root.string(), state = root + "/state";
  fs::create_directories(root + "/bin");
  fs::create_symlink(std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent", root + "/bin/copilot");
  const auto recipe = dir.write("agent.yaml", "name: agent-secret\nsteps:\n"
                                              "  - id: ask\n    prompt: \"Deploy with {{token}} now.\"\n"
                                              "  - id: bad-model\n    prompt: hello\n    model: \"{{token}}\"\n"
                                              "    on_error: continue\n");
  const auto r = run_arun({recipe, "--agent-cli", "copilot", "--session-dir", root + "/sessions", "--secret-env", "token",
                           "--output-format", "json", "-q"},
                          root, std::chrono::seconds(90),
                          {"token=" + token, "FAKE_AGENT_STATE=" + state,
                           "PATH=" + root + "/bin:" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin")});
  INFO(r.err);
  const auto result = arun::test::result_json(r);
  std::map<std::string, std::string> status, error;
  for (const auto& s : result.at("step_results").as_array()) {
    const auto id = std::string(s.at("step_id").as_string());
    status[id] = s.at("status").as_string();
    if (const auto* e = s.as_object().if_contains("error"); e && e->is_string()) error[id] = e->as_string();
  }
  CHECK(status["ask"] == "completed");
  CHECK(status["bad-model"] == "failed");
  CHECK(error["bad-model"].find("the agent CLI's command line would hold a secret") != std::string::npos);
  const auto calls = arun::test::read_json_lines(state + "/calls.jsonl");
  REQUIRE(calls.size() == 1);  // the model's call never started
  const auto argv = boost::json::serialize(calls.front().at("argv"));
  CHECK(argv.find(token) == std::string::npos);
  CHECK(argv.find("Read the file") != std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}
