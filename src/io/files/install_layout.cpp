#include "files/install_layout.hpp"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

#include <unistd.h>

namespace arun::io {
namespace fs = std::filesystem;

namespace {

// How far up from the binary a checkout's root may be (build/<kind>/src/cli/arun is 4).
constexpr int max_build_depth = 6;

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

bool regular_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The checkout whose build tree holds `exe`: the nearest ancestor with the files a checkout
// has (tools/fake-agent and schema/recipe.schema.json), within max_build_depth levels.
std::optional<fs::path> checkout_root(const fs::path& exe_dir) {
  fs::path up = exe_dir;
  for (int i = 0; i < max_build_depth && up.has_relative_path(); ++i, up = up.parent_path())
    if (regular_file(up / "tools" / "fake-agent") && regular_file(up / "schema" / "recipe.schema.json")) return up;
  return std::nullopt;
}

// The first of `candidates` that `usable` accepts; `looked_in` lists them all when none does.
template <typename Usable>
shipped_file first_of(const std::vector<fs::path>& candidates, Usable usable) {
  shipped_file out;
  for (const auto& c : candidates) {
    const auto normal = c.lexically_normal().string();
    if (usable(c)) {
      out.path = normal;
      out.looked_in.clear();
      return out;
    }
    out.looked_in.push_back(normal);
  }
  return out;
}

}  // namespace

std::string running_binary() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

shipped_file locate_fake_agent(const std::string& exe) {
  if (const char* env = std::getenv("ARUN_FAKE_AGENT"); env && *env) {
    shipped_file out{env, {}};
    if (!executable_file(env)) out = {"", {std::string(env) + " ($ARUN_FAKE_AGENT)"}};
    return out;
  }
  std::vector<fs::path> candidates;
  if (!exe.empty()) {
    const fs::path dir = fs::path(exe).parent_path();
    candidates = {dir / "fake-agent", dir / ".." / "share" / "arun" / "fake-agent"};
    if (const auto root = checkout_root(dir)) candidates.push_back(*root / "tools" / "fake-agent");
  }
  auto found = first_of(candidates, executable_file);
  if (found.path.empty()) found.looked_in.push_back("$ARUN_FAKE_AGENT (not set)");
  return found;
}

shipped_file locate_recipe_schema(const std::string& exe) {
  if (exe.empty()) return {};
  const fs::path dir = fs::path(exe).parent_path();
  std::vector<fs::path> candidates = {dir / ".." / "share" / "arun" / "schema" / "recipe.schema.json"};
  if (const auto root = checkout_root(dir)) candidates.push_back(*root / "schema" / "recipe.schema.json");
  return first_of(candidates, regular_file);
}

std::vector<std::string> shipped_recipe_dirs(const std::string& exe) {
  if (exe.empty()) return {};
  const fs::path dir = fs::path(exe).parent_path();
  fs::path recipes = dir / ".." / "share" / "arun" / "recipes";
  std::error_code ec;
  if (!fs::is_directory(recipes, ec)) {
    const auto root = checkout_root(dir);
    if (!root) return {};
    recipes = *root / "recipes";
  }
  std::vector<std::string> out;
  for (const char* sub : {"tutorials", "patterns"})
    if (fs::is_directory(recipes / sub, ec)) out.push_back((recipes / sub).lexically_normal().string());
  return out;
}

}  // namespace arun::io
