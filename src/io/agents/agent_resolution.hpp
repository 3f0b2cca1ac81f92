#pragma once
// Finding an agent's markdown file from a reference like `ns:cat:name`, and reading its YAML
// front matter and body (docs/agents.md, "Resolution order", "Front matter and body").

#include <boost/json/object.hpp>

#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

struct agent_search {
  std::vector<std::string> agent_dirs;  ///< --agent-dir, in order
  std::string working_dir;              ///< -C (the fixed project places are relative to it)
  std::string home;                     ///< $HOME; empty: the home places are skipped
  /// The directory of the recipe being run or checked; its agents/ folder is searched last,
  /// so a recipe that ships its personas beside it (recipes/patterns) runs from anywhere.
  std::string recipe_dir;
  /// Reads an environment variable (ARUN_AGENT_*, AMPLIFIER_AGENT_*); injectable for tests.
  std::function<const char*(const char*)> getenv = [](const char* name) -> const char* { return ::getenv(name); };
};

/// The search from the real environment ($HOME, the current directory when `working_dir`
/// is empty) plus the given --agent-dir directories.
agent_search agent_search_from_environment(std::vector<std::string> agent_dirs, std::string working_dir);

/// One directory searched for agents, and how users name it in messages ("--agent-dir D",
/// ".claude/agents", "~/.amplifier/agents", ...).
struct agent_dir {
  std::string path;
  std::string source;
};

/// The directory order of docs/agents.md, "Resolution order": --agent-dir dirs, then
/// .amplifier/agents, .claude/agents, amplifier-bundle/agents (below working_dir),
/// ~/.amplifier/agents, ~/.amplihack/.claude/agents.
std::vector<agent_dir> agent_search_dirs(const agent_search& s);

/// The suffix of the override variables for `reference`: upper case, `-` and `:` become `_`
/// (`ns:my-agent` → `NS_MY_AGENT`, read as ARUN_AGENT_NS_MY_AGENT and AMPLIFIER_AGENT_...).
std::string agent_env_suffix(std::string_view reference);

/// The files tried in each directory, in order: `ns:cat:name` → ns/cat/name.md, cat/name.md,
/// ns/name.md, name.md; `ns:name` → ns/name.md, name.md; `name` → name.md. Empty with
/// `error` set when the reference is not 1 to 3 segments of [A-Za-z0-9_-]+.
std::vector<std::string> agent_candidates(std::string_view reference, std::string& error);

struct resolved_agent {
  std::string reference;
  std::string path;    ///< canonical for directory matches; as given for env overrides
  std::string source;  ///< "env ARUN_AGENT_X", "--agent-dir D", ".claude/agents", ...
  boost::json::object front_matter;  ///< empty when the file has none
  std::string system_prompt;         ///< the body: everything after the front matter
};

/// The first match (docs/agents.md, "Resolution order"), read and parsed; or an error message: bad
/// reference (names the segment), an override variable naming no regular file, unreadable file,
/// invalid front matter (file:line), or not found (lists the variables and directories searched,
/// and any candidate refused because its symlinks lead outside its directory).
std::variant<resolved_agent, std::string> resolve_agent(std::string_view reference, const agent_search& s);

/// Splits an agent file into front matter and body. A first line `---` opens YAML front
/// matter that a later `---` line closes; without it the whole text is the body. Errors
/// (unclosed front matter, invalid YAML, not a mapping) name `path` and the line.
std::variant<resolved_agent, std::string> parse_agent_file(const std::string& text, const std::string& path);

struct listed_agent {
  std::string reference;  ///< rebuilt from the path: a/b/c.md → a:b:c, a/b.md → a:b, c.md → c
  std::string path;
  std::string source;
  std::string description;  ///< front matter `description` (first line), may be empty
  std::string error;        ///< why the file cannot be used as it is (invalid front matter)
  bool shadowed = false;    ///< an earlier directory has an agent with the same reference
};

/// Every `*.md` up to three levels below each search directory, in search order then path
/// order. Files whose path is not a valid reference or whose symlinks lead outside their
/// directory are left out; env overrides are not listed (they name one agent each).
std::vector<listed_agent> list_agents(const agent_search& s);

}  // namespace arun::io
