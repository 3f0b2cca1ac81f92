#include "recipe/yaml_fields.hpp"

#include "recipe/duration.hpp"
#include "recipe/yaml_traps.hpp"
#include "recipe/yaml_json.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <tuple>

namespace arun::io {

source_location diagnostic_sink::at(const YAML::Mark& m) const {
  if (m.is_null()) return {file_, 0, 0};
  return {file_, m.line + 1, m.column + 1};
}

void diagnostic_sink::error(const YAML::Mark& m, std::string message, std::string key, std::string hint) {
  list_.push_back({severity::error, at(m), std::move(message), std::move(key), std::move(hint)});
  list_.back().code = code_;
}

void diagnostic_sink::warning(const YAML::Mark& m, std::string message, std::string key, std::string hint) {
  list_.push_back({severity::warning, at(m), std::move(message), std::move(key), std::move(hint)});
  list_.back().code = code_;
}

field_reader::field_reader(const yaml::node& map, diagnostic_sink& sink, std::string where)
    : map_(map), sink_(sink), where_(std::move(where)) {
  if (!map_.IsMap()) return;
  entries_.reserve(map_.size());
  for (const auto& kv : map_) entries_.emplace_back(kv.first.Scalar(), kv.second);
}

yaml::node field_reader::node(const char* key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return v.IsNull() && v.Tag() != "!" ? yaml::node() : v;
  return {};
}

void field_reader::check_keys(const std::vector<std::string_view>& known,
                              const std::vector<std::pair<std::string_view, std::string_view>>& refused,
                              bool unknown_is_error) const {
  std::set<std::string> seen;
  const auto first = sink_.list().size();
  for (const auto& kv : map_) {
    const auto& key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      // yaml-cpp keeps both entries and reads the first: refuse the ambiguity.
      sink_.error(kv.first.Mark(), "duplicate key '" + key + "' in " + where_, key);
      sink_.list().back().code = "duplicate-key";
      continue;
    }
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const auto r = std::find_if(refused.begin(), refused.end(), [&](const auto& p) { return p.first == key; });
    if (r != refused.end()) {
      sink_.error(kv.first.Mark(), "'" + key + "' " + std::string(r->second), key);
      continue;
    }
    // What people bring from GitHub Actions and similar tools: such a key is never ignored
    // (an ignored `if:` would run the step every time).
    static const std::vector<std::tuple<std::string_view, std::string_view, std::string_view>> foreign = {
        {"if", "condition", "write the condition as 'condition:'"},
        {"needs", "depends_on", "write 'depends_on:' with the ids of the steps to wait for"},
        {"run", "command", "write the shell script as 'command:'"},
        {"working-directory", "working_dir", "write 'working_dir:'"},
        {"timeout-minutes", "timeout", "write 'timeout:' in seconds (timeout-minutes: 5 is timeout: 300)"},
        {"continue-on-error", "on_error", "write 'on_error: continue'"},
    };
    const auto f = std::find_if(foreign.begin(), foreign.end(), [&](const auto& entry) {
      return std::get<0>(entry) == key && std::find(known.begin(), known.end(), std::get<1>(entry)) != known.end();
    });
    if (f != foreign.end()) {
      sink_.error(kv.first.Mark(), "unknown key '" + key + "' in " + where_ + ": arun's name for it is '" +
                                       std::string(std::get<1>(*f)) + "'",
                  key, std::string(std::get<2>(*f)));
      continue;
    }
    // A near miss of a key valid here is a typo whose setting would be lost (`timout:` runs
    // without a timeout): an error. Other unknown keys may be another tool's: a warning.
    auto hint = did_you_mean(key, known);
    if (hint.empty() && unknown_is_error) {
      hint = "known keys:";
      for (std::size_t i = 0; i < known.size(); ++i) hint += (i ? ", " : " ") + std::string(known[i]);
    }
    if (!hint.empty())
      sink_.error(kv.first.Mark(), "unknown key '" + key + "' in " + where_, key, std::move(hint));
    else
      sink_.warning(kv.first.Mark(), "unknown key '" + key + "' in " + where_, key);
  }
  for (auto i = first; i < sink_.list().size(); ++i)
    if (sink_.list()[i].code != "duplicate-key") sink_.list()[i].code = "unknown-key";
}

YAML::Mark field_reader::mark(const char* key) const {
  const auto n = node(key);
  return n ? n.Mark() : map_.Mark();
}

void field_reader::error(const char* key, std::string message, std::string hint) const {
  sink_.error(mark(key), std::move(message), key, std::move(hint));
}

void field_reader::warning(const char* key, std::string message, std::string hint) const {
  sink_.warning(mark(key), std::move(message), key, std::move(hint));
}

std::optional<std::string> field_reader::text(const char* key, bool required) const {
  const auto n = node(key);
  if (!n) {
    if (required) sink_.error(map_.Mark(), where_ + " needs '" + key + "'", key);
    return std::nullopt;
  }
  if (!n.IsScalar() || (n.Tag() != "!" && scalar_to_json(n).is_null())) {
    error(key, "'" + std::string(key) + "' must be a string", unquoted_template_hint(n));
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<std::string> field_reader::condition(const char* key) const {
  auto v = text(key);
  if (v && v->find_first_not_of(" \t\r\n") == std::string::npos) {
    error(key, "'" + std::string(key) + "' is empty: write a condition, or leave the key out");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> field_reader::boolean(const char* key) const {
  const auto n = node(key);
  if (!n) return std::nullopt;
  const auto v = n.IsScalar() ? scalar_to_json(n) : boost::json::value();
  if (!v.is_bool()) {
    error(key, "'" + std::string(key) + "' must be true or false");
    return std::nullopt;
  }
  return v.get_bool();
}

std::optional<long long> field_reader::integer(const char* key, long long min, long long max) const {
  const auto n = node(key);
  if (!n) return std::nullopt;
  const auto v = n.IsScalar() ? scalar_to_json(n) : boost::json::value();
  if (!v.is_int64() || v.get_int64() < min || v.get_int64() > max) {
    error(key, "'" + std::string(key) + "' must be a whole number from " + std::to_string(min) + " to " +
                   std::to_string(max));
    return std::nullopt;
  }
  return v.get_int64();
}

std::optional<double> field_reader::seconds(const char* key) const {
  const auto n = node(key);
  if (!n) return std::nullopt;
  const auto v = n.IsScalar() ? scalar_to_json(n) : boost::json::value();
  std::optional<double> seconds;
  if (v.is_number() && std::isfinite(v.to_number<double>()) && v.to_number<double>() >= 0) seconds = v.to_number<double>();
  if (const auto* text = v.if_string()) seconds = parse_duration(*text);
  if (!seconds) error(key, "'" + std::string(key) + "' must be " + std::string(duration_forms) + " (0 or more)");
  return seconds;
}

std::optional<std::string> field_reader::choice(const char* key, const std::vector<std::string_view>& allowed) const {
  auto t = text(key);
  if (!t) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *t) != allowed.end()) return t;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  error(key, "'" + std::string(key) + "' must be one of " + list + ", not '" + *t + "'", did_you_mean(*t, allowed));
  return std::nullopt;
}

std::optional<std::vector<std::string>> field_reader::string_list(const char* key) const {
  const auto n = node(key);
  if (!n) return std::nullopt;
  std::vector<std::string> items;
  const bool one_string = n.IsScalar() && (n.Tag() == "!" || !scalar_to_json(n).is_null());
  if (one_string) {
    std::string_view rest = n.Scalar();
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      auto item = rest.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) items.emplace_back(item);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    return items;
  }
  if (!n.IsSequence()) {
    error(key, "'" + std::string(key) + "' must be a list of strings");
    return std::nullopt;
  }
  for (const auto& item : n) {
    if (!item.IsScalar() || (item.Tag() != "!" && scalar_to_json(item).is_null())) {
      sink_.error(item.Mark(), "'" + std::string(key) + "' must be a list of strings", key);
      return std::nullopt;
    }
    items.push_back(item.Scalar());
  }
  return items;
}

boost::json::value field_reader::json(const char* key) const {
  const auto n = node(key);
  if (!n) return nullptr;
  return yaml_to_json(n, sink_.node_budget());
}

namespace {

// Values (context, env, ...) are mappings too: yaml-cpp keeps a duplicate key silently and
// the JSON conversion would keep the last one, so report them. Depth is bounded by the
// loader's own nesting check, which runs first.
void report_duplicate_keys(const yaml::node& n, diagnostic_sink& sink, const char* field) {
  if (n.IsSequence())
    for (const auto& item : n) report_duplicate_keys(item, sink, field);
  if (!n.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!seen.insert(kv.first.Scalar()).second)
      sink.error(kv.first.Mark(), "duplicate key '" + kv.first.Scalar() + "' in '" + field + "'", field);
    report_duplicate_keys(kv.second, sink, field);
  }
}

}  // namespace

std::optional<boost::json::object> field_reader::object(const char* key) const {
  const auto n = node(key);
  if (!n) return std::nullopt;
  if (!n.IsMap()) {
    error(key, "'" + std::string(key) + "' must be a mapping");
    return std::nullopt;
  }
  report_duplicate_keys(n, sink_, key);
  return yaml_to_json(n, sink_.node_budget()).as_object();
}

std::vector<std::pair<std::string, std::string>> read_env_map(const field_reader& f, const char* key) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto env = f.node(key);
  if (!env) return out;
  if (!env.IsMap()) {
    f.error(key, "'" + std::string(key) + "' must be a mapping of variable names to values");
    return out;
  }
  static const std::regex name_pattern("[A-Za-z_][A-Za-z0-9_]*");
  std::set<std::string> seen;
  for (const auto& kv : env) {
    const auto& name = kv.first.Scalar();
    if (!seen.insert(name).second)
      f.sink().error(kv.first.Mark(), "duplicate key '" + name + "' in 'env'", "env");
    else if (name.size() > 256 || !std::regex_match(name, name_pattern))  // longer: the matcher's recursion
      f.sink().error(kv.first.Mark(), "'" + name + "' is not a valid environment variable name", "env");
    else if (!kv.second.IsScalar())
      f.sink().error(kv.second.Mark(), "the value of env '" + name + "' must be a scalar", "env",
                     unquoted_template_hint(kv.second));
    else
      out.emplace_back(name, kv.second.Scalar());
  }
  return out;
}


}  // namespace arun::io
