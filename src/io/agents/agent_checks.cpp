#include "agents/agent_checks.hpp"

#include "process/spawn.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <variant>

namespace arun::io {

std::vector<diagnostic> check_agent_references(const recipe& r, const agent_search& search, bool allow_missing) {
  std::vector<diagnostic> out;
  // Each reference is looked up once: a fan-out of 1,000 steps usually names a handful of
  // agents, and each lookup reads directories and files. The error, or none when it resolves.
  std::map<std::string, std::optional<std::string>, std::less<>> looked_up;
  auto check = [&](const step& s, const std::string& reference, const char* key, const std::string& owner) {
    if (reference.empty() || reference.find("{{") != std::string::npos) return;
    auto it = looked_up.find(reference);
    if (it == looked_up.end()) {
      auto resolved = resolve_agent(reference, search);
      const auto* failed = std::get_if<std::string>(&resolved);
      it = looked_up.emplace(reference, failed ? std::optional<std::string>(*failed) : std::nullopt).first;
    }
    const auto& error = it->second;
    if (!error) return;
    diagnostic d;
    d.level = allow_missing ? severity::warning : severity::error;
    d.where = s.at(key);
    d.key = key;
    d.message = owner + ": " + *error;
    d.code = "agent-not-found";
    if (!allow_missing) d.hint = "--agent-dir DIR adds a place to look; --allow-missing-agents makes this a warning";
    out.push_back(std::move(d));
  };
  for_each_step(r, [&](const step& s, int) {
    if (s.type == step_type::agent) check(s, s.agent.agent, "agent", "step '" + s.id + "'");
    // docs/agents.md, "auto_stage and recovery_on_failure": the agent of a recipe step's
    // recovery_on_failure.
    if (const auto* recovery = s.call.recovery_on_failure.if_object())
      if (const auto* agent = recovery->if_contains("agent"); agent && agent->is_string())
        check(s, std::string(agent->get_string()), "recovery_on_failure",
              "recovery_on_failure of step '" + s.id + "'");
  });
  return out;
}

std::optional<diagnostic> check_agent_cli(const std::vector<const recipe*>& recipes, const agent_cli& cli,
                                          const std::vector<std::string>& env, severity level,
                                          const step* must_run) {
  const step* first = nullptr;
  bool own_path = false;  // a PATH of the recipe's or a step's env is the one the agent gets
  auto sets_path = [](const std::vector<std::pair<std::string, std::string>>& e) {
    return std::any_of(e.begin(), e.end(), [](const auto& kv) { return kv.first == "PATH"; });
  };
  for (const auto* r : recipes) {
    own_path = own_path || sets_path(r->env);
    for_each_step(*r, [&](const step& s, int) {
      if (!first && (s.type == step_type::agent || !s.call.recovery_on_failure.is_null())) first = &s;
      own_path = own_path || sets_path(s.env);
    });
  }
  if (!first || own_path) return std::nullopt;
  if (must_run) first = must_run;
  const std::string needs = must_run ? "' needs it, so nothing was run" : "' needs it";
  const std::string program = cli.kind == agent_cli_kind::custom ? cli.command_template.front() : cli.program;
  // `{working_dir}/bin/agent`: known only when the step runs.
  if (program.find('{') != std::string::npos || find_program(program, env)) return std::nullopt;
  const auto path = env_value(env, "PATH");
  diagnostic d;
  d.level = must_run ? severity::error : level;
  d.where = first->at(first->type == step_type::agent ? "prompt" : "recovery_on_failure");
  const std::string where =
      program.find('/') != std::string::npos ? program : "PATH=" + path.value_or("<unset>");
  if (cli.kind == agent_cli_kind::fake) {
    // The places beside arun, then PATH (a $ARUN_FAKE_AGENT path is already among the places).
    std::string looked;
    for (const auto& place : cli.fake_looked_in) looked += (looked.empty() ? "" : ", ") + place;
    if (program.find('/') == std::string::npos) looked += (looked.empty() ? "" : ", ") + where;
    d.message = "the fake agent (--agent-cli fake) was not found, and step '" + first->id + needs + " (looked in " +
                looked + ")";
  } else {
    d.message = "the agent CLI '" + program + "' (" + describe(cli) + ") is not installed or not on PATH, and step '" +
                first->id + needs + " (looked in " + where + ")";
  }
  d.key = "agent";
  d.code = "agent-cli-not-found";
  d.hint = cli.kind == agent_cli_kind::fake
               ? "set ARUN_FAKE_AGENT to the path of fake-agent (tools/fake-agent in arun's sources, "
                 "share/arun/fake-agent in an install)"
               : "install it, or choose another with --agent-cli or --agent-command (--agent-cli fake rehearses the "
                 "recipe without one)";
  return d;
}

const step* agent_step_that_must_run(const recipe& r, bool tag_filter, bool leaves_run_here) {
  if (tag_filter) return nullptr;  // an untagged step may be left out by --include-tags
  for (const auto& s : r.steps)
    if (s.type == step_type::agent && s.condition.empty() && s.when_tags.empty() && !s.foreach && !s.loop_while &&
        s.on_error == on_error_policy::fail && !s.cache && (leaves_run_here || s.local_only))
      return &s;
  return nullptr;
}

}  // namespace arun::io
