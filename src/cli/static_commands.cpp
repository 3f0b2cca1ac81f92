// Commands that read recipes or agents without running them: explain, graph, list,
// agents list (docs/cli.md).
#include "commands.hpp"
#include "exit_codes.hpp"
#include "run_output.hpp"

#include "agents/agent_resolution.hpp"
#include "recipe/discovery.hpp"
#include "recipe/recipe_loader.hpp"
#include "recipe/recipe_views.hpp"
#include "recipe/sub_recipes.hpp"
#include "output/result_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

namespace arun::cli {

int explain_command(const recipe_options& o, const std::string& format) {
  const auto in = load_recipe_input(o, false);
  if (!in.value) return in.exit_code;
  const bool written = format == "json" ? write_json_stdout(io::explain_to_json(*in.value))
                                        : write_stdout(io::explain_recipe(*in.value));
  return written ? exit_success : exit_output_failed;
}

int graph_command(const recipe_options& o, const std::string& format, bool expand) {
  const auto in = load_recipe_input(o, false);
  if (!in.value) return in.exit_code;
  io::graph_options g;
  g.format = format == "mermaid" ? io::graph_format::mermaid : io::graph_format::dot;
  g.max_depth = in.value->recursion.max_depth;
  io::load_limits limits;
  limits.max_bytes = o.max_recipe_bytes;
  io::sub_recipe_cache children(*in.value, io::discovery_from_environment(o.recipe_dirs, o.working_dir), limits);
  if (expand) g.expand = [&](const recipe& caller, const step& call) { return children.find(caller, call); };
  return write_stdout(io::graph_recipe(*in.value, g)) ? exit_success : exit_output_failed;
}

namespace {

struct listed_recipe {
  std::string name, version, description, path;
  bool valid = false, shadowed = false;
};

// Every recipe file in the recipe search path, in discovery order.
std::vector<listed_recipe> discover_recipes(const recipe_options& o) {
  namespace fs = std::filesystem;
  const auto discovery = io::command_line_discovery(o.recipe_dirs, o.working_dir);
  std::set<std::string> seen_names;
  std::vector<listed_recipe> out;
  for (const auto& dir : io::search_dirs(discovery)) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file(ec) && (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml"))
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      listed_recipe r;
      r.name = file.stem().string();
      r.path = file.string();
      // An earlier directory's recipe of the same name shadows this one (discovery order).
      r.shadowed = !seen_names.insert(r.name).second;
      const auto loaded = io::load_recipe_file(r.path);
      r.valid = loaded.value.has_value();
      if (r.valid) {
        r.version = loaded.value->version;
        r.description = loaded.value->description;
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

int list_command(const recipe_options& o, const std::string& format) {
  const auto recipes = discover_recipes(o);
  if (recipes.empty()) std::fprintf(stderr, "arun: no recipes found in the recipe search path (see docs/running.md)\n");
  if (format == "json") {
    boost::json::array list;
    for (const auto& r : recipes)
      list.push_back({{"name", r.name}, {"version", r.valid ? boost::json::value(r.version) : nullptr},
                      {"description", r.description}, {"path", r.path}, {"valid", r.valid}, {"shadowed", r.shadowed}});
    auto doc = io::document_header();
    doc["recipes"] = std::move(list);
    return write_json_stdout(doc) ? exit_success : exit_output_failed;
  }
  std::string text;
  for (const auto& r : recipes) {
    const auto description = r.valid ? r.description.substr(0, r.description.find('\n')) : "(invalid: arun validate " + r.path + ")";
    text += fmt::format("{:<28} {:<9} {}{}\n    {}\n", r.name, r.valid ? r.version : "-", description,
                        r.shadowed ? " [shadowed]" : "", r.path);
  }
  return write_stdout(text) ? exit_success : exit_output_failed;
}

int agents_list_command(const recipe_options& o, const std::string& format) {
  const auto agents = io::list_agents(io::agent_search_from_environment(o.agent_dirs, o.working_dir));
  if (agents.empty()) std::fprintf(stderr, "arun: no agents found in the agent search path (see docs/agents.md)\n");
  if (format == "json") {
    boost::json::array list;
    for (const auto& a : agents)
      list.push_back({{"reference", a.reference}, {"path", a.path}, {"source", a.source},
                      {"description", a.description}, {"valid", a.error.empty()},
                      {"error", a.error.empty() ? boost::json::value(nullptr) : boost::json::value(a.error)},
                      {"shadowed", a.shadowed}});
    auto doc = io::document_header();
    doc["agents"] = std::move(list);
    return write_json_stdout(doc) ? exit_success : exit_output_failed;
  }
  std::string text;
  for (const auto& a : agents) {
    // A shadowed agent is never chosen: an earlier place has the same reference.
    text += fmt::format("{:<28} {}  ({}){}\n", a.reference, a.path, a.source, a.shadowed ? " [shadowed]" : "");
    if (!a.error.empty()) text += fmt::format("    invalid: {}\n", a.error);
    else if (!a.description.empty()) text += fmt::format("    {}\n", a.description);
  }
  return write_stdout(text) ? exit_success : exit_output_failed;
}

}  // namespace arun::cli
