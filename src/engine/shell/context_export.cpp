#include "shell/context_export.hpp"

#include "spilled_output.hpp"

#include "template/render.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace arun::engine {
namespace {

constexpr std::string_view prefix = "RECIPE_VAR_";
constexpr std::size_t max_warnings = 20;

// One name the context offers, before collisions and limits.
struct candidate {
  std::string name;
  std::string key;  // the key path, dotted: `obj.status`
  std::size_t depth = 0;
  const boost::json::value* value = nullptr;
};

void collect(const boost::json::object& obj, const std::string& name_prefix, const std::string& key_prefix,
             std::size_t depth, std::vector<candidate>& out) {
  for (const auto& kv : obj) {
    const std::string key = key_prefix.empty() ? std::string(kv.key()) : key_prefix + "." + std::string(kv.key());
    const std::string name = name_prefix + shell_name_part(kv.key());
    out.push_back({name, key, depth, &kv.value()});
    if (const auto* child = kv.value().if_object(); child && !is_spilled(kv.value()))
      collect(*child, name + "__", key, depth + 1, out);
  }
}


// Every name with the key that wins it, sorted by name. Keys of `locals` (loop variables)
// hide the context's keys of the same name, as they do in templates.
std::vector<candidate> candidates(const boost::json::object& context, const boost::json::object* locals) {
  std::vector<candidate> all;
  for (const auto* layer : {&context, locals}) {
    if (!layer) continue;
    const bool hidden_layer = layer == &context && locals;
    for (const auto& kv : *layer) {
      if (hidden_layer && locals->contains(kv.key())) continue;
      const std::string name = std::string(prefix) + shell_name_part(kv.key());
      all.push_back({name, std::string(kv.key()), 0, &kv.value()});
      if (const auto* child = kv.value().if_object(); child && !is_spilled(kv.value()))
        collect(*child, name + "__", std::string(kv.key()), 1, all);
      if (kv.value().is_object() || kv.value().is_array()) continue;
      auto alias = shell_alias(kv.key());
      if (!alias.empty() && !(alias[0] >= '0' && alias[0] <= '9') && alias_allowed(alias))
        all.push_back({std::move(alias), std::string(kv.key()), 0, &kv.value()});
    }
  }
  std::sort(all.begin(), all.end(), [](const candidate& a, const candidate& b) {
    return std::tie(a.name, a.key, a.depth) < std::tie(b.name, b.key, b.depth);
  });
  all.erase(std::unique(all.begin(), all.end(), [](const candidate& a, const candidate& b) { return a.name == b.name; }),
            all.end());
  return all;
}

std::size_t env_cost(const std::string& name, const std::string& value) { return name.size() + value.size() + 2; }

// Linux refuses to exec with one "NAME=VALUE" string of 128 KiB or more (MAX_ARG_STRLEN),
// whatever a step's max_env_value_bytes says.
constexpr std::size_t max_env_string = 128 * 1024;

bool too_large(const std::string& name, const std::string& value, const export_limits& limits) {
  return value.size() > limits.max_value_bytes || name.size() + value.size() + 1 >= max_env_string;
}

// Context keys left out, grouped by reason and key, reported as a bounded list of warnings.
class omissions {
public:
  void add(const std::string& reason, const std::string& key, const std::string& name) {
    auto& names = by_reason_[reason][key];
    if (names.empty()) ++keys_;
    names.push_back(name);
  }
  void report(std::vector<std::string>& warnings) const {
    std::size_t shown = 0;
    for (const auto& [reason, keys] : by_reason_)
      for (const auto& [key, names] : keys) {
        if (shown == max_warnings) break;
        ++shown;
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        warnings.push_back("context key '" + key + "' (" + list + ") " + reason + ": not exported to the environment");
      }
    if (keys_ > max_warnings)
      warnings.push_back(std::to_string(keys_ - max_warnings) + " more context keys not exported to the environment");
  }

private:
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_reason_;
  std::size_t keys_ = 0;
};

// The context's variables after those already `taken`; over-limit values are marked by file
// (`skip_large` false) or left out with a warning (`skip_large` true).
void add_context(context_export& out, const boost::json::object& context, const boost::json::object* locals,
                 const name_set& taken, const export_limits& limits, std::size_t total, bool skip_large) {
  omissions left_out;
  const auto over_value =
      "is larger than the " + std::to_string(std::min(limits.max_value_bytes, max_env_string)) + "-byte limit of one value";
  const auto over_total = "would pass the " + std::to_string(limits.max_total_bytes) + "-byte limit of all values";
  for (auto& c : candidates(context, locals)) {
    if (taken.contains(c.name)) continue;
    // Loading it would bring the output back into memory for every step: a template
    // reference ({{key}}) loads it for the one step that uses it.
    if (holds_spilled(*c.value)) {
      left_out.add("holds an output stored on disk (larger than the spill threshold; use {{" + c.key + "}})", c.key,
                   c.name);
      continue;
    }
    auto text = value_text(*c.value);
    if (text.find('\0') != std::string::npos) {
      left_out.add("holds a NUL byte, which an environment variable cannot", c.key, c.name);
      continue;
    }
    const auto cost = env_cost(c.name, text);
    const bool large = too_large(c.name, text, limits);
    const bool past_total = !large && total + cost > limits.max_total_bytes;
    if (skip_large && (large || past_total)) {
      left_out.add(large ? over_value : over_total, c.key, c.name);
      continue;
    }
    if (!large && !past_total) total += cost;
    out.variables.push_back({std::move(c.name), std::move(text), large || past_total});
  }
  left_out.report(out.warnings);
}

}  // namespace

std::string shell_alias(std::string_view key) {
  auto s = shell_name_part(key);
  for (auto& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

std::string shell_name_part(std::string_view key) {
  std::string part;
  part.reserve(key.size());
  for (const char c : key) {
    if (c == '.')
      part += "__";
    else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')
      part += c;
    else
      part += '_';
  }
  return part;
}

context_export export_context(const boost::json::object& context, const export_limits& limits) {
  context_export out;
  add_context(out, context, nullptr, {}, limits, 0, false);
  return out;
}

context_export plan_shell_exports(const boost::json::object& context,
                                  const std::vector<shell_variable>& script_variables,
                                  const export_limits& limits, const boost::json::object* locals) {
  context_export out;
  std::size_t total = 0;
  name_set taken;
  for (const auto& v : script_variables) {
    const auto cost = env_cost(v.name, v.value);
    const bool by_file = too_large(v.name, v.value, limits) || total + cost > limits.max_total_bytes;
    if (!by_file) total += cost;
    out.variables.push_back({v.name, v.value, by_file});
    taken.insert(v.name);
  }
  add_context(out, context, locals, taken, limits, total, true);
  return out;
}

}  // namespace arun::engine
