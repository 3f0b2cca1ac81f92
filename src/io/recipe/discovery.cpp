#include "recipe/discovery.hpp"
#include "files/install_layout.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace arun::io {
namespace fs = std::filesystem;

discovery_options discovery_from_environment(std::vector<std::string> recipe_dirs, std::string working_dir) {
  discovery_options o;
  o.recipe_dirs = std::move(recipe_dirs);
  std::error_code ec;
  if (working_dir.empty()) working_dir = fs::current_path(ec).string();  // empty if cwd was deleted
  o.working_dir = std::move(working_dir);
  if (const char* home = std::getenv("HOME")) o.home = home;
  if (const char* path = std::getenv("ARUN_RECIPE_PATH")) o.recipe_path_env = path;
  if (const char* dir = std::getenv("AMPLIHACK_PACKAGE_RECIPE_DIR")) o.package_recipe_dir = dir;
  return o;
}

discovery_options command_line_discovery(std::vector<std::string> recipe_dirs, std::string working_dir) {
  auto o = discovery_from_environment(std::move(recipe_dirs), std::move(working_dir));
  o.shipped_dirs = shipped_recipe_dirs(running_binary());
  return o;
}

std::vector<std::string> search_dirs(const discovery_options& o, const std::string& caller_dir) {
  std::vector<std::string> dirs = o.recipe_dirs;
  std::string_view rest = o.recipe_path_env;
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (!caller_dir.empty()) dirs.push_back(caller_dir);
  const fs::path wd = o.working_dir;
  for (const char* sub : {"recipes", ".claude/recipes", "amplifier-bundle/recipes"}) dirs.push_back((wd / sub).string());
  // A recipe run from a sub-directory of a project finds the project's bundle, as amplihack
  // does; outside a git work tree there is no project root to stop at, so nothing is added.
  auto normal = [](const fs::path& p) {
    std::error_code ec;
    auto n = fs::absolute(p, ec).lexically_normal();
    return n.has_filename() ? n : n.parent_path();  // "/a/b/" is "/a/b"
  };
  const auto here = normal(wd);
  if (const auto top = git_work_tree(here.string()); !top.empty()) {
    const auto root = normal(top);
    const auto below = here.lexically_relative(root);
    if (!below.empty() && *below.begin() != "..")
      for (auto p = here; p != root && p != p.root_path();) {
        p = p.parent_path();
        dirs.push_back((p / "amplifier-bundle/recipes").string());
      }
  }
  if (!o.package_recipe_dir.empty()) dirs.push_back(o.package_recipe_dir);
  if (!o.home.empty()) dirs.push_back((fs::path(o.home) / ".amplihack/.claude/recipes").string());
  dirs.insert(dirs.end(), o.shipped_dirs.begin(), o.shipped_dirs.end());
  return dirs;
}

std::string invalid_name_reason(const std::string& name) {
  if (name.empty()) return "a recipe name cannot be empty";
  if (name.find('/') != std::string::npos) return "a recipe name cannot contain '/'";
  if (name.find("..") != std::string::npos) return "a recipe name cannot contain '..'";
  if (name.front() == '.') return "a recipe name cannot start with '.'";
  return {};
}

found_recipe find_recipe(const std::string& name, const discovery_options& o, const std::string& caller_dir) {
  found_recipe out;
  if (!invalid_name_reason(name).empty()) return out;
  for (const auto& dir : search_dirs(o, caller_dir)) {
    out.looked_in.push_back(dir);
    for (const char* ext : {".yaml", ".yml"}) {
      const auto candidate = fs::path(dir) / (name + ext);
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) {
        out.path = candidate.string();
        return out;
      }
    }
  }
  return out;
}

bool is_path_reference(const std::string& ref) {
  if (ref.find('/') != std::string::npos) return true;
  const auto ends_with = [&](std::string_view suffix) {
    return ref.size() >= suffix.size() && ref.compare(ref.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".yaml") || ends_with(".yml");
}

bool looks_like_path(const std::string& arg) {
  if (is_path_reference(arg)) return true;
  std::error_code ec;
  return fs::is_regular_file(arg, ec);
}

std::optional<std::string> resolve_inside(const std::string& relative, const std::string& caller_dir,
                                          const std::vector<std::string>& roots, std::string& error) {
  const fs::path given = fs::path(relative).is_absolute() ? fs::path(relative) : fs::path(caller_dir) / relative;
  std::error_code ec;
  const auto real = fs::canonical(given, ec);
  if (ec) {
    error = "recipe '" + relative + "' not found (looked for " + given.lexically_normal().string() + ")";
    return std::nullopt;
  }
  for (const auto& root : roots) {
    if (root.empty()) continue;
    const auto real_root = fs::canonical(root, ec);
    if (ec) continue;
    const auto rel = real.lexically_relative(real_root);
    if (!rel.empty() && *rel.begin() != "..") return real.string();
  }
  error = "recipe path '" + relative + "' resolves to " + real.string() +
          ", outside the recipe's directory, its git work tree, the working directory and the -R directories";
  return std::nullopt;
}

std::vector<std::string> recipe_roots(const std::string& top_path, const discovery_options& discovery) {
  std::error_code ec;
  const auto dir = fs::absolute(top_path, ec).parent_path().string();
  std::vector<std::string> roots = {dir, git_work_tree(dir), discovery.working_dir};
  roots.insert(roots.end(), discovery.recipe_dirs.begin(), discovery.recipe_dirs.end());
  return roots;
}

std::string git_work_tree(const std::string& dir) {
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / ".git", ec)) return p.string();
    if (p == p.root_path()) break;
  }
  return {};
}

}  // namespace arun::io
