#include "agent_checks.hpp"

#include <variant>

namespace arun::io {

std::vector<diagnostic> check_agent_references(const recipe& r, const agent_search& search, bool allow_missing) {
  std::vector<diagnostic> out;
  for_each_step(r, [&](const step& s, int) {
    if (s.type != step_type::agent) return;
    const auto& reference = s.agent.agent;
    if (reference.empty() || reference.find("{{") != std::string::npos) return;
    auto resolved = resolve_agent(reference, search);
    const auto* error = std::get_if<std::string>(&resolved);
    if (error == nullptr) return;
    diagnostic d;
    d.level = allow_missing ? severity::warning : severity::error;
    d.where = s.at("agent");
    d.key = "agent";
    d.message = "step '" + s.id + "': " + *error;
    if (!allow_missing) d.hint = "--agent-dir DIR adds a place to look; --allow-missing-agents makes this a warning";
    out.push_back(std::move(d));
  });
  return out;
}

}  // namespace arun::io
