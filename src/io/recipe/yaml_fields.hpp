#pragma once
// Reading typed fields out of YAML mappings, with a diagnostic (file, line, column, key,
// what was expected) for everything that is not what docs/reference/recipe.md allows.

#include <arun/diagnostics.hpp>

#include <boost/json/value.hpp>
#include "recipe/yaml_tree.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun::io {

/// Collects the diagnostics of one file.
class diagnostic_sink {
public:
  diagnostic_sink(std::string file, std::size_t node_budget)
      : file_(std::move(file)), node_budget_(node_budget) {}

  source_location at(const YAML::Mark& m) const;
  void error(const YAML::Mark& m, std::string message, std::string key = {}, std::string hint = {});
  void warning(const YAML::Mark& m, std::string message, std::string key = {}, std::string hint = {});
  /// The code (docs/running.md) given to what error() and warning() report from now on.
  void set_code(std::string code) { code_ = std::move(code); }

  const std::string& file() const noexcept { return file_; }
  std::vector<diagnostic>& list() noexcept { return list_; }
  bool has_errors() const noexcept { return arun::has_errors(list_); }
  /// Nodes YAML-to-JSON conversions may still visit in this file (bounds alias bombs).
  std::size_t& node_budget() noexcept { return node_budget_; }

private:
  std::string file_;
  std::size_t node_budget_;
  std::vector<diagnostic> list_;
  std::string code_ = "invalid-field";
};

/// A mapping being read. `where` names it in messages ("the recipe", "step 'build'").
class field_reader {
public:
  field_reader(const yaml::node& map, diagnostic_sink& sink, std::string where);

  /// Warns about keys not in `known` (with a suggestion), errors on keys in `refused`
  /// (with the reason given next to them). `unknown_is_error`: every unknown key is an error,
  /// for mappings where a key arun would ignore costs more than a refusal (`budget`).
  void check_keys(const std::vector<std::string_view>& known,
                  const std::vector<std::pair<std::string_view, std::string_view>>& refused = {},
                  bool unknown_is_error = false) const;

  bool has(const char* key) const { return static_cast<bool>(node(key)); }
  /// The value of `key` (the first, if written twice); an undefined node when absent or an
  /// explicit YAML null (`key:`, `key: null`, `key: ~`): the older runners read those as absent.
  yaml::node node(const char* key) const;
  YAML::Mark mark(const char* key) const;
  const yaml::node& map() const noexcept { return map_; }
  const std::string& where() const noexcept { return where_; }
  diagnostic_sink& sink() const noexcept { return sink_; }

  /// A scalar read as text (numbers and booleans too); null or a collection is an error.
  std::optional<std::string> text(const char* key, bool required = false) const;
  /// A condition (`condition`, `while_condition`, `break_when`): text that is not blank. An
  /// empty condition is an error, not "always".
  std::optional<std::string> condition(const char* key) const;
  std::optional<bool> boolean(const char* key) const;
  /// An integer in [min, max].
  std::optional<long long> integer(const char* key, long long min, long long max) const;
  /// A duration, 0 or more: a number of seconds or a text parse_duration reads (`5m`, `1h30m`).
  std::optional<double> seconds(const char* key) const;
  /// One of `allowed` (the message lists them).
  std::optional<std::string> choice(const char* key, const std::vector<std::string_view>& allowed) const;
  /// A list of strings, or one string with comma-separated items.
  std::optional<std::vector<std::string>> string_list(const char* key) const;
  /// Any YAML value as JSON (YAML 1.2 typing); null when absent.
  boost::json::value json(const char* key) const;
  /// A mapping as a JSON object; an error when present but not a mapping.
  std::optional<boost::json::object> object(const char* key) const;

  void error(const char* key, std::string message, std::string hint = {}) const;
  void warning(const char* key, std::string message, std::string hint = {}) const;

private:
  yaml::node map_;
  // The mapping's keys (pointing into the document) and values, in order.
  std::vector<std::pair<std::string_view, yaml::node>> entries_;
  diagnostic_sink& sink_;
  std::string where_;
};

/// An `env` mapping (variable names to scalar values, in order): bad names, duplicates and
/// non-scalar values are errors at their own positions.
std::vector<std::pair<std::string, std::string>> read_env_map(const field_reader& f, const char* key);

}  // namespace arun::io
