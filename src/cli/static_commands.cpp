// Commands that read recipes or agents without running them: explain, graph, list,
// agents list (SPEC §13).
#include "commands.hpp"
#include "exit_codes.hpp"

#include "agent_resolution.hpp"
#include "discovery.hpp"
#include "recipe_loader.hpp"
#include "recipe_views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

namespace arun::cli {

int explain_command(const recipe_options& o) {
  const auto in = load_recipe_input(o, false);
  if (!in.value) return in.exit_code;
  std::fputs(io::explain_recipe(*in.value).c_str(), stdout);
  return exit_success;
}

int graph_command(const recipe_options& o, const std::string& format) {
  const auto in = load_recipe_input(o, false);
  if (!in.value) return in.exit_code;
  const auto f = format == "mermaid" ? io::graph_format::mermaid : io::graph_format::dot;
  std::fputs(io::graph_recipe(*in.value, f).c_str(), stdout);
  return exit_success;
}

int list_command(const recipe_options& o) {
  namespace fs = std::filesystem;
  const auto discovery = io::discovery_from_environment(o.recipe_dirs, o.working_dir);
  std::set<std::string> seen_names;
  int shown = 0;
  for (const auto& dir : io::search_dirs(discovery)) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file(ec) && (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml"))
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const auto name = file.stem().string();
      // An earlier directory's recipe of the same name shadows this one (discovery order).
      const bool shadowed = !seen_names.insert(name).second;
      auto loaded = io::load_recipe_file(file.string());
      const std::string version = loaded.value ? loaded.value->version : "-";
      std::string description = loaded.value ? loaded.value->description : "(invalid: arun validate " + file.string() + ")";
      description = description.substr(0, description.find('\n'));
      fmt::print("{:<28} {:<9} {}{}\n    {}\n", name, version, description, shadowed ? " [shadowed]" : "", file.string());
      ++shown;
    }
  }
  if (shown == 0) std::fprintf(stderr, "arun: no recipes found in the recipe search path (see docs/running.md)\n");
  return exit_success;
}

int agents_list_command(const recipe_options& o) {
  const auto agents = io::list_agents(io::agent_search_from_environment(o.agent_dirs, o.working_dir));
  for (const auto& a : agents) {
    // A shadowed agent is never chosen: an earlier place has the same reference.
    fmt::print("{:<28} {}  ({}){}\n", a.reference, a.path, a.source, a.shadowed ? " [shadowed]" : "");
    if (!a.error.empty()) fmt::print("    invalid: {}\n", a.error);
    else if (!a.description.empty()) fmt::print("    {}\n", a.description);
  }
  if (agents.empty()) std::fprintf(stderr, "arun: no agents found in the agent search path (see docs/agents.md)\n");
  return exit_success;
}

}  // namespace arun::cli
