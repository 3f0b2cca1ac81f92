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

// Linux refuses to exec with one "NAME=VALUE" string of 128 KiB or more (MAX_ARG_STRLEN),
// whatever a step's max_env_value_bytes says.
constexpr std::size_t max_env_string = 128 * 1024;

}  // namespace

// One name a layer of variables offers, before collisions and limits.
struct context_export_table::entry {
  enum class kind { text, spilled, nul, oversized };
  std::string name;
  std::string key;   // the key path, dotted: `obj.status`
  std::string root;  // the top-level key: a loop variable of this name hides the entry
  std::size_t depth = 0;
  kind what = kind::text;
  std::string text;      // the value as the shell gets it (kept for kind::text, and oversized on demand)
  std::size_t size = 0;  // text.size(), also when the text was not kept
};

namespace {

using entry = context_export_table::entry;

entry make_entry(std::string name, std::string key, std::string_view root, std::size_t depth,
                 const boost::json::value& value, bool keep_oversized) {
  entry e{std::move(name), std::move(key), std::string(root), depth};
  // Loading it would bring the output back into memory for every step: a template
  // reference ({{key}}) loads it for the one step that uses it.
  if (holds_spilled(value)) {
    e.what = entry::kind::spilled;
    return e;
  }
  e.text = value_text(value);
  e.size = e.text.size();
  if (e.text.find('\0') != std::string::npos)
    e.what = entry::kind::nul;
  else if (e.name.size() + e.size + 1 >= max_env_string)
    e.what = entry::kind::oversized;
  if (e.what != entry::kind::text && !(keep_oversized && e.what == entry::kind::oversized)) std::string().swap(e.text);
  return e;
}

void collect(const boost::json::object& obj, const std::string& name_prefix, const std::string& key_prefix,
             std::string_view root, std::size_t depth, bool keep_oversized, std::vector<entry>& out) {
  for (const auto& kv : obj) {
    std::string key = key_prefix.empty() ? std::string(kv.key()) : key_prefix + "." + std::string(kv.key());
    std::string name = name_prefix + shell_name_part(kv.key());
    out.push_back(make_entry(name, key, root, depth, kv.value(), keep_oversized));
    if (const auto* child = kv.value().if_object(); child && !is_spilled(kv.value()))
      collect(*child, name + "__", key, root, depth + 1, keep_oversized, out);
  }
}

bool entry_before(const entry& a, const entry& b) {
  return std::tie(a.name, a.key, a.depth) < std::tie(b.name, b.key, b.depth);
}

// Every name `layer` offers, sorted by name (then key): several entries may share a name.
std::vector<entry> layer_entries(const boost::json::object& layer, bool keep_oversized) {
  std::vector<entry> all;
  for (const auto& kv : layer) {
    const std::string key(kv.key());
    const std::string name = std::string(prefix) + shell_name_part(key);
    all.push_back(make_entry(name, key, key, 0, kv.value(), keep_oversized));
    if (const auto* child = kv.value().if_object(); child && !is_spilled(kv.value()))
      collect(*child, name + "__", key, key, 1, keep_oversized, all);
    if (kv.value().is_object() || kv.value().is_array()) continue;
    auto alias = shell_alias(key);
    if (!alias.empty() && !(alias[0] >= '0' && alias[0] <= '9') && alias_allowed(alias))
      all.push_back(make_entry(std::move(alias), key, key, 0, kv.value(), keep_oversized));
  }
  std::sort(all.begin(), all.end(), entry_before);
  return all;
}

std::size_t env_cost(std::size_t name_size, std::size_t value_size) { return name_size + value_size + 2; }

bool too_large(std::size_t name_size, std::size_t value_size, const export_limits& limits) {
  return value_size > limits.max_value_bytes || name_size + value_size + 1 >= max_env_string;
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

// Calls `each` with the entry that wins each name: the first by key of the context's entries
// and the locals', where a local hides every entry of the context key it shares a name with.
template <class Each>
void for_each_winner(const std::vector<entry>& context, const std::vector<entry>& local,
                     const boost::json::object* locals, Each each) {
  std::size_t i = 0, j = 0;
  const std::string* last = nullptr;
  for (;;) {
    while (i < context.size() && locals && locals->contains(context[i].root)) ++i;
    const entry* next = nullptr;
    if (i < context.size() && (j == local.size() || !entry_before(local[j], context[i])))
      next = &context[i++];
    else if (j < local.size())
      next = &local[j++];
    else
      break;
    if (last && *last == next->name) continue;
    last = &next->name;
    each(*next);
  }
}

// The context's variables after those already `taken`; over-limit values are marked by file
// (`skip_large` false) or left out with a warning (`skip_large` true).
void add_context(context_export& out, const context_export_table& table, const boost::json::object* locals,
                 const name_set& taken, const export_limits& limits, std::size_t total, bool skip_large) {
  omissions left_out;
  const auto over_value =
      "is larger than the " + std::to_string(std::min(limits.max_value_bytes, max_env_string)) + "-byte limit of one value";
  const auto over_total = "would pass the " + std::to_string(limits.max_total_bytes) + "-byte limit of all values";
  const auto local = locals ? layer_entries(*locals, !skip_large) : std::vector<entry>{};
  for_each_winner(table.entries(), local, locals, [&](const entry& c) {
    if (taken.contains(c.name)) return;
    switch (c.what) {
      case entry::kind::spilled:
        left_out.add("holds an output stored on disk (larger than the spill threshold; use {{" + c.key + "}})", c.key,
                     c.name);
        return;
      case entry::kind::nul:
        left_out.add("holds a NUL byte, which an environment variable cannot", c.key, c.name);
        return;
      case entry::kind::text:
      case entry::kind::oversized: break;
    }
    const auto cost = env_cost(c.name.size(), c.size);
    const bool large = too_large(c.name.size(), c.size, limits);
    const bool past_total = !large && total + cost > limits.max_total_bytes;
    if (skip_large && (large || past_total)) {
      left_out.add(large ? over_value : over_total, c.key, c.name);
      return;
    }
    if (!large && !past_total) total += cost;
    out.variables.push_back({c.name, c.text, large || past_total});
  });
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

context_export_table::context_export_table(const boost::json::object& context, bool keep_oversized_texts)
    : entries_(std::make_unique<std::vector<entry>>(layer_entries(context, keep_oversized_texts))) {}

context_export_table::~context_export_table() = default;

context_export export_context(const boost::json::object& context, const export_limits& limits) {
  context_export out;
  const context_export_table table(context, true);
  add_context(out, table, nullptr, {}, limits, 0, false);
  return out;
}

context_export plan_shell_exports(const boost::json::object& context,
                                  const std::vector<shell_variable>& script_variables,
                                  const export_limits& limits, const boost::json::object* locals,
                                  const context_export_table* context_table) {
  context_export out;
  std::size_t total = 0;
  name_set taken;
  for (const auto& v : script_variables) {
    const auto cost = env_cost(v.name.size(), v.value.size());
    const bool by_file = too_large(v.name.size(), v.value.size(), limits) || total + cost > limits.max_total_bytes;
    if (!by_file) total += cost;
    out.variables.push_back({v.name, v.value, by_file});
    taken.insert(v.name);
  }
  if (context_table) {
    add_context(out, *context_table, locals, taken, limits, total, true);
  } else {
    const context_export_table table(context);
    add_context(out, table, locals, taken, limits, total, true);
  }
  return out;
}

}  // namespace arun::engine
