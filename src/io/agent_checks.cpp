#include "agent_checks.hpp"

#include <variant>

namespace arun::io {

std::vector<diagnostic> check_agent_references(const recipe& r, const agent_search& search, bool allow_missing) {
  std::vector<diagnostic> out;
  auto check = [&](const step& s, const std::string& reference, const char* key, const std::string& owner) {
    if (reference.empty() || reference.find("{{") != std::string::npos) return;
    auto resolved = resolve_agent(reference, search);
    const auto* error = std::get_if<std::string>(&resolved);
    if (error == nullptr) return;
    diagnostic d;
    d.level = allow_missing ? severity::warning : severity::error;
    d.where = s.at(key);
    d.key = key;
    d.message = owner + ": " + *error;
    if (!allow_missing) d.hint = "--agent-dir DIR adds a place to look; --allow-missing-agents makes this a warning";
    out.push_back(std::move(d));
  };
  for_each_step(r, [&](const step& s, int) {
    if (s.type == step_type::agent) check(s, s.agent.agent, "agent", "step '" + s.id + "'");
    // SPEC §3.5: the agent of a recipe step's recovery_on_failure.
    if (const auto* recovery = s.call.recovery_on_failure.if_object())
      if (const auto* agent = recovery->if_contains("agent"); agent && agent->is_string())
        check(s, std::string(agent->get_string()), "recovery_on_failure",
              "recovery_on_failure of step '" + s.id + "'");
  });
  return out;
}

}  // namespace arun::io
