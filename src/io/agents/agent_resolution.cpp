#include "agents/agent_resolution.hpp"

#include "recipe/yaml_json.hpp"

#include <boost/json/value.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

namespace arun::io {
namespace fs = std::filesystem;
namespace {

// Agent files are prompts: anything larger is a mistake, not a persona.
constexpr std::uintmax_t max_agent_bytes = 1u << 20;
constexpr std::size_t max_front_matter_nodes = 100000;

bool valid_segment(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '_' || c == '-';
  });
}

std::vector<std::string> split_reference(std::string_view reference) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const auto colon = reference.find(':', start);
    parts.emplace_back(reference.substr(start, colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts;
}

// The canonical path of `candidate` when it is a regular file whose real location is below
// `base`'s real location. `escaped` is set when it exists but its symlinks lead outside.
std::optional<fs::path> contained_file(const fs::path& base, const fs::path& candidate, bool& escaped) {
  std::error_code ec;
  if (!fs::is_regular_file(candidate, ec)) return std::nullopt;
  const auto real = fs::canonical(candidate, ec);
  if (ec) return std::nullopt;
  const auto real_base = fs::canonical(base, ec);
  if (ec) return std::nullopt;
  const auto rel = real.lexically_relative(real_base);
  if (rel.empty() || *rel.begin() == "..") {
    escaped = true;
    return std::nullopt;
  }
  return real;
}

std::optional<std::string> read_text(const fs::path& path, std::string& error) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    error = "cannot read agent file " + path.string() + ": " + ec.message();
    return std::nullopt;
  }
  if (size > max_agent_bytes) {
    error = "agent file " + path.string() + " is " + std::to_string(size) + " bytes; agent files are limited to 1 MiB";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    error = "cannot read agent file " + path.string();
    return std::nullopt;
  }
  return text.str();
}

std::variant<resolved_agent, std::string> load(const fs::path& path, std::string_view reference, std::string source) {
  std::string error;
  const auto text = read_text(path, error);
  if (!text) return error;
  auto parsed = parse_agent_file(*text, path.string());
  if (auto* agent = std::get_if<resolved_agent>(&parsed)) {
    agent->reference = std::string(reference);
    agent->source = std::move(source);
  }
  return parsed;
}

// A line of `text` from `pos` without its end of line (a trailing '\r' is dropped too).
std::string_view line_at(std::string_view text, std::size_t pos, std::size_t& next) {
  auto end = text.find('\n', pos);
  next = end == std::string_view::npos ? text.size() : end + 1;
  if (end == std::string_view::npos) end = text.size();
  auto line = text.substr(pos, end - pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool is_marker(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line == "---";
}

}  // namespace

agent_search agent_search_from_environment(std::vector<std::string> agent_dirs, std::string working_dir) {
  agent_search s;
  s.agent_dirs = std::move(agent_dirs);
  std::error_code ec;
  if (working_dir.empty()) working_dir = fs::current_path(ec).string();  // empty if cwd was deleted
  s.working_dir = std::move(working_dir);
  if (const char* home = std::getenv("HOME")) s.home = home;
  return s;
}

std::vector<agent_dir> agent_search_dirs(const agent_search& s) {
  std::vector<agent_dir> dirs;
  for (const auto& d : s.agent_dirs) dirs.push_back(agent_dir{d, "--agent-dir " + d});
  const fs::path wd = s.working_dir.empty() ? fs::path(".") : fs::path(s.working_dir);
  for (const char* sub : {".amplifier/agents", ".claude/agents", "amplifier-bundle/agents"})
    dirs.push_back(agent_dir{(wd / sub).string(), sub});
  if (!s.home.empty())
    for (const char* sub : {".amplifier/agents", ".amplihack/.claude/agents"})
      dirs.push_back(agent_dir{(fs::path(s.home) / sub).string(), std::string("~/") + sub});
  if (!s.recipe_dir.empty()) dirs.push_back(agent_dir{(fs::path(s.recipe_dir) / "agents").string(), "agents/ beside the recipe"});
  return dirs;
}

std::string agent_env_suffix(std::string_view reference) {
  std::string out(reference);
  for (auto& c : out) {
    if (c == '-' || c == ':') c = '_';
    else c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

std::vector<std::string> agent_candidates(std::string_view reference, std::string& error) {
  const auto parts = split_reference(reference);
  if (parts.size() > 3) {
    error = "agent reference '" + std::string(reference) + "' has " + std::to_string(parts.size()) +
            " segments; use name, ns:name or ns:cat:name";
    return {};
  }
  for (const auto& p : parts)
    if (!valid_segment(p)) {
      error = "agent reference '" + std::string(reference) + "': segment '" + p +
              "' must be letters, digits, '_' or '-' (and not empty)";
      return {};
    }
  const auto md = [](const std::string& n) { return n + ".md"; };
  if (parts.size() == 1) return {md(parts[0])};
  // amplihack keeps a namespace's agents in core/ and specialized/ (amplihack:architect is
  // amplihack/core/architect.md).
  if (parts.size() == 2)
    return {parts[0] + "/" + md(parts[1]), parts[0] + "/core/" + md(parts[1]), parts[0] + "/specialized/" + md(parts[1]),
            md(parts[1])};
  return {parts[0] + "/" + parts[1] + "/" + md(parts[2]), parts[1] + "/" + md(parts[2]), parts[0] + "/" + md(parts[2]),
          md(parts[2])};
}

std::variant<resolved_agent, std::string> resolve_agent(std::string_view reference, const agent_search& s) {
  std::string error;
  const auto candidates = agent_candidates(reference, error);
  if (candidates.empty()) return error;
  const auto suffix = agent_env_suffix(reference);
  for (const char* prefix : {"ARUN_AGENT_", "AMPLIFIER_AGENT_"}) {
    const std::string var = prefix + suffix;
    const char* value = s.getenv ? s.getenv(var.c_str()) : nullptr;
    if (value == nullptr || *value == '\0') continue;
    std::error_code ec;
    if (!fs::is_regular_file(value, ec))
      return "agent '" + std::string(reference) + "': " + var + "=" + value + " does not name a regular file";
    return load(value, reference, "env " + var);
  }
  std::vector<std::string> refused;
  std::string looked;
  for (const auto& dir : agent_search_dirs(s)) {
    looked += (looked.empty() ? "" : ", ") + dir.path;
    for (const auto& rel : candidates) {
      bool escaped = false;
      if (const auto real = contained_file(dir.path, fs::path(dir.path) / rel, escaped))
        return load(*real, reference, dir.source);
      // A symlink out of the agent directory is refused, but a later place may still match.
      if (escaped) refused.push_back((fs::path(dir.path) / rel).string());
    }
  }
  std::string files;
  for (const auto& c : candidates) files += (files.empty() ? "" : ", ") + c;
  std::string message = "agent '" + std::string(reference) + "' not found (looked for " + files + " in " + looked +
                        "; ARUN_AGENT_" + suffix + " and AMPLIFIER_AGENT_" + suffix + " are unset)";
  for (const auto& r : refused) message += "; refused " + r + ": its symlinks lead outside its agent directory";
  return message;
}

std::variant<resolved_agent, std::string> parse_agent_file(const std::string& text, const std::string& path) {
  resolved_agent agent;
  agent.path = path;
  std::size_t next = 0;
  if (!is_marker(line_at(text, 0, next))) {
    agent.system_prompt = text;
    return agent;
  }
  const std::size_t yaml_start = next;
  std::size_t pos = next;
  int line_no = 2;
  for (; pos < text.size(); ++line_no) {
    std::size_t after = 0;
    if (is_marker(line_at(text, pos, after))) break;
    pos = after;
  }
  if (pos >= text.size()) return path + ":1:1: front matter opened by '---' is not closed by a '---' line";
  const std::string yaml = text.substr(yaml_start, pos - yaml_start);
  line_at(text, pos, next);
  agent.system_prompt = text.substr(next);
  yaml::parsed parsed;
  try {
    parsed = yaml::parse(yaml);
  } catch (const YAML::ParserException& e) {
    // The front matter starts on the file's second line; yaml-cpp's marks are 0-based.
    return path + ":" + std::to_string(e.mark.line + 2) + ":" + std::to_string(e.mark.column + 1) +
           ": invalid YAML front matter: " + e.msg;
  }
  const auto& root = parsed.root;
  if (!root.IsDefined() || root.IsNull()) return agent;
  if (!root.IsMap()) return path + ":2:1: front matter must be a mapping (key: value lines)";
  try {
    std::size_t budget = max_front_matter_nodes;
    agent.front_matter = yaml_to_json(root, budget).as_object();
  } catch (const yaml_too_large& e) {
    return path + ":2:1: front matter is too large: " + e.what();
  }
  return agent;
}

std::vector<listed_agent> list_agents(const agent_search& s) {
  std::vector<listed_agent> out;
  std::map<std::string, bool> seen;
  for (const auto& dir : agent_search_dirs(s)) {
    std::error_code ec;
    if (!fs::is_directory(dir.path, ec)) continue;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir.path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      // Deeper files cannot be named by a reference (at most ns:cat:name).
      if (it.depth() >= 2) it.disable_recursion_pending();
      if (it->path().extension() == ".md" && it->is_regular_file(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      bool escaped = false;
      const auto real = contained_file(dir.path, file, escaped);
      if (!real) continue;
      std::string reference;
      auto rel = file.lexically_relative(dir.path);
      rel.replace_extension();
      for (const auto& part : rel) reference += (reference.empty() ? "" : ":") + part.string();
      std::string error;
      if (agent_candidates(reference, error).empty()) continue;
      listed_agent a;
      a.reference = reference;
      a.path = real->string();
      a.source = dir.source;
      a.shadowed = !seen.emplace(reference, true).second;
      auto loaded = load(*real, reference, dir.source);
      if (auto* agent = std::get_if<resolved_agent>(&loaded)) {
        if (const auto* d = agent->front_matter.if_contains("description"); d && d->is_string()) {
          const std::string text(d->as_string());
          a.description = text.substr(0, text.find('\n'));
        }
      } else {
        a.error = std::get<std::string>(loaded);
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace arun::io
