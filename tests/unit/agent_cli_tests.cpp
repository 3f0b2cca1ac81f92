// The agent CLI presets and --agent-command templates (docs/agents.md, "Choosing the CLI"): where
// the persona goes and the argv of each shape. The e2e tests run the same shapes against
// tools/fake-agent.
#include <catch2/catch.hpp>

#include "agents/agent_cli.hpp"
#include "agents/amplihack_preset.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <variant>
#include <vector>

using namespace arun::io;
using strings = std::vector<std::string>;

namespace {

agent_cli preset(const std::string& name) {
  auto r = parse_agent_cli(name, "/opt/fake-agent");
  REQUIRE(std::holds_alternative<agent_cli>(r));
  return std::get<agent_cli>(r);
}

agent_cli command(const std::string& text) {
  auto r = parse_agent_command(text);
  INFO(text);
  REQUIRE(std::holds_alternative<agent_cli>(r));
  return std::get<agent_cli>(r);
}

agent_request request(std::string persona = "You review code.", std::string model = "m1") {
  agent_request q;
  q.system_prompt = std::move(persona);
  q.prompt = "Review the diff.";
  q.model = std::move(model);
  q.working_dir = "/work/dir";
  return q;
}

strings argv_of(const agent_cli& cli, const agent_request& q) {
  return agent_argv(cli, compose_payload(cli, q), q, "/tmp/p.md", "/tmp/s.md");
}

}  // namespace

TEST_CASE("agent cli: claude passes the persona and model as flags and the prompt on stdin") {
  const auto cli = preset("claude");
  const auto q = request();
  const auto payload = compose_payload(cli, q);
  CHECK(payload.prompt == "Review the diff.");
  CHECK(payload.prompt_on_stdin);
  CHECK(argv_of(cli, q) == strings{"claude", "-p", "--output-format", "json", "--add-dir", "/work/dir", "--model", "m1",
                                   "--append-system-prompt", "You review code."});
  CHECK(argv_of(cli, request("", "")) == strings{"claude", "-p", "--output-format", "json", "--add-dir", "/work/dir"});
}

TEST_CASE("agent cli: a claude persona over 96 KiB goes in front of the prompt instead") {
  const auto cli = preset("claude");
  const auto q = request(std::string(max_system_prompt_arg_bytes + 1, 'x'));
  const auto payload = compose_payload(cli, q);
  CHECK(payload.system_prompt.empty());
  CHECK(payload.prompt.starts_with("# Instructions\n\nxxx"));
  CHECK(payload.prompt.ends_with("\n# Task\n\nReview the diff."));
  const auto argv = argv_of(cli, q);
  CHECK(std::find(argv.begin(), argv.end(), "--append-system-prompt") == argv.end());
}

TEST_CASE("agent cli: copilot gets the persona under Instructions and the prompt in -p") {
  const auto cli = preset("copilot");
  const auto q = request();
  const auto payload = compose_payload(cli, q);
  CHECK_FALSE(payload.prompt_on_stdin);
  CHECK(payload.prompt == "# Instructions\n\nYou review code.\n\n# Task\n\nReview the diff.");
  CHECK(argv_of(cli, q) == strings{"copilot", "-p", payload.prompt, "--allow-all-tools", "--model", "m1"});
}

TEST_CASE("agent cli: a copilot prompt too large for argv is pointed to by its file") {
  const auto cli = preset("copilot");
  auto q = request("");
  q.prompt = std::string(max_prompt_arg_bytes + 1, 'y');
  const auto argv = argv_of(cli, q);
  REQUIRE(argv.size() >= 3);
  CHECK(argv[2] == prompt_pointer("/tmp/p.md"));
  CHECK(argv[2].size() < 200);
}

TEST_CASE("agent cli: codex reads the prompt with the persona from stdin") {
  const auto cli = preset("codex");
  const auto q = request();
  const auto payload = compose_payload(cli, q);
  CHECK(payload.prompt_on_stdin);
  CHECK(payload.prompt.starts_with("# Instructions\n\nYou review code.\n"));
  CHECK(argv_of(cli, q) == strings{"codex", "exec", "--json", "--model", "m1", "-"});
  CHECK(argv_of(cli, request("", "")) == strings{"codex", "exec", "--json", "-"});
}

TEST_CASE("agent cli: amplihack launches the inner CLI with its arguments after --") {
  CHECK(argv_of(preset("amplihack"), request()) ==
        strings{"amplihack", "claude", "--", "-p", "--output-format", "json", "--add-dir", "/work/dir", "--model", "m1",
                "--append-system-prompt", "You review code."});
  CHECK(argv_of(preset("amplihack:codex"), request()) ==
        strings{"amplihack", "codex", "--", "exec", "--json", "--model", "m1", "-"});
  const auto copilot = argv_of(preset("amplihack:copilot"), request());
  REQUIRE(copilot.size() > 4);
  CHECK(copilot[0] == "amplihack");
  CHECK(copilot[1] == "copilot");
  CHECK(copilot[2] == "--");
  CHECK(copilot[3] == "-p");
  CHECK(copilot[4].starts_with("# Instructions"));
}

TEST_CASE("agent cli: a preset's system-prompt suffix follows the persona, and copilot may go without --allow-all-tools") {
  auto cli = preset("amplihack:copilot");
  cli.system_prompt_suffix = "Do not recurse.";
  auto p = compose_payload(cli, request());
  CHECK(p.prompt == "# Instructions\n\nYou review code.\n\nDo not recurse.\n\n# Task\n\nReview the diff.");
  CHECK(std::find(argv_of(cli, request()).begin(), argv_of(cli, request()).end(), "--allow-all-tools") !=
        argv_of(cli, request()).end());
  cli.allow_all_tools = false;
  const auto argv = argv_of(cli, request());
  CHECK(std::find(argv.begin(), argv.end(), "--allow-all-tools") == argv.end());
  auto claude = preset("amplihack");
  claude.system_prompt_suffix = "Do not recurse.";
  CHECK(compose_payload(claude, request()).system_prompt == "You review code.\n\nDo not recurse.");
  CHECK(compose_payload(claude, request("")).system_prompt == "Do not recurse.");  // no persona: the suffix alone
}

TEST_CASE("agent cli: amplihack settings come from AMPLIHACK_* with amplihack's defaults") {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto s = read_amplihack_settings(lookup);
  CHECK(s.max_depth == "6");
  CHECK(s.max_sessions == "10");
  CHECK(s.allow_all_tools);
  CHECK_FALSE(s.rate_limit_retries);
  CHECK(s.fallback_model.empty());
  env = {{"AMPLIHACK_MAX_DEPTH", "3"}, {"AMPLIHACK_MAX_SESSIONS", "2"}, {"AMPLIHACK_NO_ALLOW_ALL_TOOLS", "1"},
         {"AMPLIHACK_RATELIMIT_MAX_RETRIES", "7"}, {"AMPLIHACK_RATELIMIT_BASE_DELAY_SECS", "30"},
         {"AMPLIHACK_RATELIMIT_MAX_DELAY_SECS", "10"}, {"AMPLIHACK_RATELIMIT_FALLBACK_AUTO_MODEL", "yes"}};
  s = read_amplihack_settings(lookup);
  CHECK(s.max_depth == "3");
  CHECK(s.max_sessions == "2");
  CHECK_FALSE(s.allow_all_tools);
  CHECK(s.rate_limit_retries == 7);
  CHECK(s.rate_limit_delay == 30.0);
  CHECK(s.rate_limit_max_delay == 30.0);  // never below the first delay
  CHECK(s.fallback_model == "auto");
  CHECK(s.warnings.empty());
  env = {{"AMPLIHACK_RATELIMIT_MAX_RETRIES", "101"}, {"AMPLIHACK_RATELIMIT_BASE_DELAY_SECS", "soon"},
         {"AMPLIHACK_NO_ALLOW_ALL_TOOLS", ""}};
  s = read_amplihack_settings(lookup);
  CHECK_FALSE(s.rate_limit_retries);
  CHECK_FALSE(s.rate_limit_delay);
  CHECK(s.allow_all_tools);  // empty is unset, as amplihack reads it
  CHECK(s.warnings.size() == 2);
  env = {{"AMPLIHACK_RATELIMIT_BASE_DELAY_SECS", "900"}};  // above the default cap of 600: the cap follows
  s = read_amplihack_settings(lookup);
  CHECK(s.rate_limit_max_delay == 900.0);
}

TEST_CASE("agent cli: fake runs the stand-in agent in claude's shape") {
  CHECK(argv_of(preset("fake"), request()) == strings{"/opt/fake-agent", "-p", "--output-format", "json", "--add-dir",
                                                       "/work/dir", "--model", "m1", "--append-system-prompt",
                                                       "You review code."});
}

TEST_CASE("agent cli: claude codex and fake speak JSON while copilot and templates speak text") {
  CHECK(reply_format_of(preset("claude")) == reply_format::claude_json);
  CHECK(reply_format_of(preset("fake")) == reply_format::claude_json);
  CHECK(reply_format_of(preset("amplihack")) == reply_format::claude_json);
  CHECK(reply_format_of(preset("codex")) == reply_format::codex_jsonl);
  CHECK(reply_format_of(preset("amplihack:codex")) == reply_format::codex_jsonl);
  CHECK(reply_format_of(preset("copilot")) == reply_format::text);
  CHECK(reply_format_of(preset("amplihack:copilot")) == reply_format::text);
  CHECK(reply_format_of(command("claude -p --output-format json")) == reply_format::text);
  const auto copilot = argv_of(preset("copilot"), request());
  CHECK(std::find(copilot.begin(), copilot.end(), "--output-format") == copilot.end());
}

TEST_CASE("agent cli: unknown names are refused with the choices") {
  for (const char* bad : {"gpt", "amplihack:gpt", "", "Claude"}) {
    auto r = parse_agent_cli(bad, "/opt/fake-agent");
    REQUIRE(std::holds_alternative<std::string>(r));
    CHECK(std::get<std::string>(r).find("claude") != std::string::npos);
  }
}

TEST_CASE("agent cli: a command template fills its placeholders") {
  const auto cli = command("mycli run --model {model} --sys={system_prompt_file} --in {prompt_file} -C {working_dir}");
  const auto q = request();
  const auto payload = compose_payload(cli, q);
  CHECK(payload.needs_system_prompt_file);
  CHECK(payload.system_prompt == "You review code.");
  CHECK(payload.prompt == "Review the diff.");
  CHECK(payload.prompt_on_stdin);
  CHECK(argv_of(cli, q) ==
        strings{"mycli", "run", "--model", "m1", "--sys=/tmp/s.md", "--in", "/tmp/p.md", "-C", "/work/dir"});
}

TEST_CASE("agent cli: without a model the template drops the model word and its option") {
  const auto cli = command("mycli --model {model} --in {prompt_file} --m={model}");
  CHECK(argv_of(cli, request("p", "")) == strings{"mycli", "--in", "/tmp/p.md"});
  // The option before {model} is only dropped when it is a plain option word.
  CHECK(argv_of(command("mycli {prompt_file} {model}"), request("p", "")) == strings{"mycli", "/tmp/p.md"});
}

TEST_CASE("agent cli: a template without a system prompt file gets the persona in the prompt") {
  const auto cli = command("mycli {prompt_file}");
  const auto payload = compose_payload(cli, request());
  CHECK_FALSE(payload.needs_system_prompt_file);
  CHECK(payload.prompt == "# Instructions\n\nYou review code.\n\n# Task\n\nReview the diff.");
}

TEST_CASE("agent cli: bad templates are refused") {
  for (const char* bad : {"", "   ", "mycli {prompt}", "mycli {prompt_file} {modle}"}) {
    INFO(bad);
    auto r = parse_agent_command(bad);
    REQUIRE(std::holds_alternative<std::string>(r));
  }
  CHECK(std::get<std::string>(parse_agent_command("x {modle}")).find("{modle}") != std::string::npos);
}

TEST_CASE("agent cli: the model comes from the step then provider_preferences then the agent file") {
  const auto prefs = boost::json::parse(R"([{"provider": "openai", "model": "gpt-4o-mini"},
                                             {"provider": "anthropic", "model": "claude-haiku-*"}])");
  // The step's model wins.
  CHECK(choose_model(preset("claude"), "opus", "", prefs, "sonnet").model == "opus");
  // codex serves openai: the first entry, literal.
  CHECK(choose_model(preset("codex"), "", "", prefs, "").model == "gpt-4o-mini");
  // claude skips openai; the glob picks the agent file's model when it matches.
  CHECK(choose_model(preset("claude"), "", "", prefs, "claude-haiku-4").model == "claude-haiku-4");
  // ... and otherwise leaves the model to the CLI, with a warning.
  const auto unmatched = choose_model(preset("claude"), "", "", prefs, "claude-opus-4");
  CHECK(unmatched.model.empty());
  REQUIRE(unmatched.warnings.size() == 1);
  CHECK(unmatched.warnings[0].find("claude-haiku-*") != std::string::npos);
  // No preferences: the agent file's model.
  CHECK(choose_model(preset("claude"), "", "", boost::json::value(), "sonnet").model == "sonnet");
  // A provider the CLI does not serve is a warning, not a failure.
  const auto other = choose_model(preset("claude"), "", "openai", boost::json::value(), "");
  REQUIRE(other.warnings.size() == 1);
  CHECK(other.warnings[0].find("provider 'openai'") != std::string::npos);
  CHECK(choose_model(preset("copilot"), "", "OpenAI", boost::json::value(), "").warnings.empty());
}

// docs/agents.md#secrets-and-the-agents-command-line: argv is readable by every user.
TEST_CASE("agent cli: no secret goes in argv: copilot points to the prompt file, claude's persona joins the prompt",
          "[secrets]") {
  const secret_check holds_secret = [](std::string_view text) {
    return text.find("tok-SECRET-1") != std::string_view::npos;
  };
  auto q = request("You review code with tok-SECRET-1.");
  q.prompt = "Deploy with tok-SECRET-1.";
  const auto copilot = preset("copilot");
  const auto payload = compose_payload(copilot, q, holds_secret);
  CHECK(payload.prompt_by_file);
  const auto argv = agent_argv(copilot, payload, q, "/tmp/p.md", "");
  for (const auto& word : argv) CHECK_FALSE(holds_secret(word));
  CHECK(argv[2] == prompt_pointer("/tmp/p.md"));
  CHECK(payload.prompt.find("Deploy with tok-SECRET-1.") != std::string::npos);  // in the file
  // Without a secret the prompt stays in -p.
  CHECK_FALSE(compose_payload(copilot, request(), holds_secret).prompt_by_file);
  const auto claude = preset("claude");
  const auto with_persona = compose_payload(claude, q, holds_secret);
  CHECK(with_persona.system_prompt.empty());
  CHECK(with_persona.prompt.starts_with("# Instructions\n\nYou review code with tok-SECRET-1."));
  for (const auto& word : agent_argv(claude, with_persona, q, "/tmp/p.md", "")) CHECK_FALSE(holds_secret(word));
  CHECK(compose_payload(claude, request(), holds_secret).system_prompt == "You review code.");
}
