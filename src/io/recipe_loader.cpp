#include "recipe_loader.hpp"

#include "yaml_json.hpp"

#include <boost/json/object.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace arun::io {
namespace {

// Keys this version understands, and SPEC keys it does not run yet (refused rather than
// silently ignored: a recipe must never run differently from what it says).
const std::vector<std::string_view> top_level_keys = {
    "name", "description", "version", "author", "created", "updated", "tags", "context",
    "steps", "default_step_timeout", "inputs", "parameters", "metadata"};
const std::vector<std::string_view> top_level_unsupported = {
    "stages", "recursion", "hooks", "extends", "context_validation", "rate_limiting",
    "execution", "output", "lenient_templates"};
const std::vector<std::string_view> step_keys = {
    "id", "type", "command", "output", "timeout", "working_dir", "cwd", "env",
    "name", "description", "inputs", "outputs"};
const std::vector<std::string_view> step_unsupported = {
    "condition", "retry", "on_error", "continue_on_error", "nonfatal", "fatal", "when_tags",
    "parallel_group", "depends_on", "parse_json", "parse_json_required", "requires_approval",
    "approval_prompt", "approval_timeout", "approval_default", "on_approval_denied", "agent",
    "prompt", "recipe", "steps", "foreach", "as", "foreach_var", "max_concurrent", "parallel",
    "collect", "max_iterations", "checkpoint_iterations", "while_condition",
    "max_while_iterations", "break_when", "update_context", "output_exit_code",
    "max_env_value_bytes", "mode", "model", "provider", "model_role", "provider_preferences",
    "agent_config", "auto_stage", "context", "sub_context", "recursion", "recovery_on_failure"};

class loader {
public:
  loader(std::string file, const load_limits& limits) : file_(std::move(file)), limits_(limits) {}

  load_result load(std::string_view text) {
    load_result out;
    if (text.size() > limits_.max_bytes) {
      error({}, "file is " + std::to_string(text.size()) + " bytes; recipes are limited to " +
                    std::to_string(limits_.max_bytes) + " bytes (--max-recipe-bytes raises it)");
      return finish();
    }
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
      // yaml-cpp reports "bad file" for nesting deeper than 500 levels.
      error(e.mark, e.msg == "bad file" ? "document nests too deeply" : "invalid YAML: " + e.msg);
      return finish();
    }
    if (!root.IsMap()) {
      error(root.Mark(), "a recipe must be a mapping with 'name' and 'steps'");
      return finish();
    }
    try {
      read_recipe(root);
    } catch (const yaml_too_large& e) {
      error(root.Mark(), std::string(e.what()) + " (aliases expand beyond " +
                             std::to_string(limits_.max_nodes) + " nodes)");
    }
    return finish();
  }

private:
  source_location at(const YAML::Mark& m) const {
    if (m.is_null()) return {file_, 0, 0};
    return {file_, m.line + 1, m.column + 1};
  }
  void error(const YAML::Mark& m, std::string msg, std::string key = {}, std::string hint = {}) {
    diags_.push_back({severity::error, at(m), std::move(msg), std::move(key), std::move(hint)});
  }
  void warning(const YAML::Mark& m, std::string msg, std::string key = {}, std::string hint = {}) {
    diags_.push_back({severity::warning, at(m), std::move(msg), std::move(key), std::move(hint)});
  }

  load_result finish() {
    load_result r;
    if (!has_errors(diags_)) r.value = std::move(recipe_);
    r.diagnostics = std::move(diags_);
    return r;
  }

  static std::string suggestion(std::string_view key, const std::vector<std::string_view>& known) {
    std::string best;
    std::size_t best_distance = 3;
    for (auto k : known) {
      const auto d = edit_distance(key, k);
      if (d < best_distance) best_distance = d, best = k;
    }
    return best.empty() ? std::string() : "did you mean '" + best + "'?";
  }

  // Checks every key of a mapping: duplicates, unsupported and unknown ones.
  void check_keys(const YAML::Node& map, const std::vector<std::string_view>& known,
                  const std::vector<std::string_view>& unsupported, std::string_view where) {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const auto& key = kv.first.Scalar();
      if (!seen.insert(key).second) {
        error(kv.first.Mark(), "duplicate key '" + key + "' in " + std::string(where), key);
        continue;
      }
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      if (std::find(unsupported.begin(), unsupported.end(), key) != unsupported.end()) {
        error(kv.first.Mark(), "'" + key + "' is not supported by this version of arun yet", key);
        continue;
      }
      std::vector<std::string_view> all = known;
      all.insert(all.end(), unsupported.begin(), unsupported.end());
      warning(kv.first.Mark(), "unknown key '" + key + "' in " + std::string(where), key,
              suggestion(key, all));
    }
  }

  std::optional<std::string> string_field(const YAML::Node& map, const char* key, bool required,
                                          std::string_view where) {
    const auto node = map[key];
    if (!node) {
      if (required) error(map.Mark(), std::string(where) + " needs '" + key + "'", key);
      return std::nullopt;
    }
    if (!node.IsScalar() || (node.Tag() != "!" && scalar_to_json(node).is_null())) {
      error(node.Mark(), "'" + std::string(key) + "' must be a string", key);
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<std::chrono::duration<double>> seconds_field(const YAML::Node& map, const char* key) {
    const auto node = map[key];
    if (!node) return std::nullopt;
    const auto v = node.IsScalar() ? scalar_to_json(node) : boost::json::value();
    if (!v.is_number() || !std::isfinite(v.to_number<double>()) || v.to_number<double>() < 0) {
      error(node.Mark(), "'" + std::string(key) + "' must be a number of seconds (0 or more)", key);
      return std::nullopt;
    }
    return std::chrono::duration<double>(v.to_number<double>());
  }

  void read_recipe(const YAML::Node& root) {
    check_keys(root, top_level_keys, top_level_unsupported, "the recipe");
    recipe_.source_path = file_;
    if (auto name = string_field(root, "name", true, "the recipe")) recipe_.name = *name;
    if (auto d = string_field(root, "description", false, "the recipe")) recipe_.description = *d;
    if (auto v = root["version"]; v && v.IsScalar()) recipe_.version = v.Scalar();
    recipe_.default_step_timeout = seconds_field(root, "default_step_timeout");
    if (auto ctx = root["context"]) {
      if (!ctx.IsMap()) {
        error(ctx.Mark(), "'context' must be a mapping of variable names to values", "context");
      } else {
        std::size_t budget = limits_.max_nodes;
        recipe_.context = yaml_to_json(ctx, budget).as_object();
      }
    }
    const auto steps = root["steps"];
    if (!steps) {
      error(root.Mark(), "the recipe needs 'steps': a list of steps", "steps");
      return;
    }
    if (!steps.IsSequence() || steps.size() == 0) {
      error(steps.Mark(), "'steps' must be a non-empty list of steps", "steps");
      return;
    }
    std::set<std::string> ids;
    for (const auto& node : steps) read_step(node, ids);
  }

  void read_step(const YAML::Node& node, std::set<std::string>& ids) {
    if (!node.IsMap()) {
      error(node.Mark(), "a step must be a mapping with 'id' and 'command'");
      return;
    }
    check_keys(node, step_keys, step_unsupported, "a step");
    step s;
    s.where = at(node.Mark());
    if (auto id = string_field(node, "id", true, "every step")) {
      static const std::regex id_pattern("[A-Za-z0-9_.-]+");
      if (!std::regex_match(*id, id_pattern))
        error(node["id"].Mark(), "step id '" + *id + "' may only use letters, digits, '_', '.' and '-'", "id");
      else if (!ids.insert(*id).second)
        error(node["id"].Mark(), "step id '" + *id + "' is used twice; ids must be unique", "id");
      s.id = *id;
    }
    if (auto type = string_field(node, "type", false, "a step"); type && *type != "bash") {
      const bool known = *type == "agent" || *type == "recipe";
      error(node["type"].Mark(),
            known ? "steps of type '" + *type + "' are not supported by this version of arun yet"
                  : "unsupported step type '" + *type + "' (expected bash, agent or recipe)",
            "type");
    }
    if (auto command = string_field(node, "command", false, "a step")) {
      s.command = *command;
      check_no_templates(node["command"], s.command);
    } else if (!node["command"]) {
      error(node.Mark(), "step '" + s.id + "' has no body: add 'command'", "command");
    }
    s.output = string_field(node, "output", false, "a step");
    s.timeout = seconds_field(node, "timeout");
    if (node["working_dir"] && node["cwd"])
      error(node["cwd"].Mark(), "give 'working_dir' or its alias 'cwd', not both", "cwd");
    if (auto wd = string_field(node, node["cwd"] ? "cwd" : "working_dir", false, "a step"))
      s.working_dir = *wd;
    read_env(node["env"], s);
    recipe_.steps.push_back(std::move(s));
  }

  void read_env(const YAML::Node& env, step& s) {
    if (!env) return;
    if (!env.IsMap()) {
      error(env.Mark(), "'env' must be a mapping of variable names to values", "env");
      return;
    }
    static const std::regex name_pattern("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& kv : env) {
      const auto& name = kv.first.Scalar();
      if (!std::regex_match(name, name_pattern)) {
        error(kv.first.Mark(), "'" + name + "' is not a valid environment variable name", "env");
        continue;
      }
      if (!kv.second.IsScalar()) {
        error(kv.second.Mark(), "the value of env '" + name + "' must be a scalar", "env");
        continue;
      }
      s.env.emplace_back(name, kv.second.Scalar());
    }
  }

  void check_no_templates(const YAML::Node& node, const std::string& text) {
    static const std::regex reference(R"(\{\{\s*[A-Za-z_][^{}]*\}\})");
    if (std::regex_search(text, reference))
      error(node.Mark(), "template references ({{...}}) are not supported by this version of arun yet",
            "command");
  }

  std::string file_;
  load_limits limits_;
  recipe recipe_;
  std::vector<diagnostic> diags_;
};

load_result file_error(const std::string& path, std::string message) {
  diagnostic d;
  d.where.file = path;
  d.message = std::move(message);
  load_result r;
  r.diagnostics.push_back(std::move(d));
  return r;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const auto above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

load_result load_recipe_text(std::string_view text, const std::string& file, const load_limits& limits) {
  return loader(file, limits).load(text);
}

load_result load_recipe_file(const std::string& path, const load_limits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error(path, "cannot read the recipe file");
  // Read at most one byte past the limit: enough to refuse an oversized file without
  // loading all of it.
  std::string text(limits.max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > limits.max_bytes)
    return file_error(path, "file is larger than " + std::to_string(limits.max_bytes) +
                                " bytes, the recipe limit (--max-recipe-bytes raises it)");
  return load_recipe_text(text, path, limits);
}

}  // namespace arun::io
