#include "recipe/cache_fields.hpp"

#include "cache/age.hpp"
#include "recipe/yaml_json.hpp"

namespace arun::io {
namespace {

const char* const cache_example = "cache: {key: [\"v2\"], max_age: 7d, scope: recipe, files: [\"src/**/*.py\"]}";

// `key` or `files`: one scalar or a list of scalars, each a template rendered per instance.
std::optional<std::vector<std::string>> texts(const field_reader& c, const char* key, const char* what) {
  const auto n = c.node(key);
  std::vector<std::string> out;
  auto one = [&](const yaml::node& item) {
    if (!item.IsScalar()) return false;
    const auto v = scalar_to_json(item);
    if (v.is_null()) return false;
    out.push_back(v.is_string() ? std::string(v.get_string()) : item.Scalar());
    return true;
  };
  bool ok = n.IsSequence() ? true : one(n);
  if (n.IsSequence())
    for (const auto& item : n) ok = ok && one(item);
  if (!ok || (n.IsSequence() && out.empty())) {
    c.error(key, std::string("'") + key + "' must be " + what + " or a list of them", cache_example);
    return std::nullopt;
  }
  return out;
}

}  // namespace

void read_cache(const field_reader& f, step& s) {
  const auto n = f.node("cache");
  if (!n) return;
  if (n.IsScalar()) {
    const auto v = scalar_to_json(n);
    if (!v.is_bool()) {
      f.error("cache", "'cache' must be true, false or a mapping (key, max_age, scope, files)", cache_example);
      return;
    }
    if (v.get_bool()) s.cache = std::make_shared<const step_cache>();
    return;
  }
  if (!n.IsMap()) {
    f.error("cache", "'cache' must be true, false or a mapping (key, max_age, scope, files)", cache_example);
    return;
  }
  const field_reader c(n, f.sink(), "the cache of step '" + s.id + "'");
  // A key arun ignored would reuse outputs the user meant to keep apart: unknown keys are errors.
  c.check_keys({"key", "max_age", "scope", "files"}, {}, true);
  step_cache cache;
  if (c.has("key"))
    if (auto values = texts(c, "key", "a value")) cache.key = std::move(*values);
  if (c.has("files"))
    if (auto globs = texts(c, "files", "a glob (relative to the step's working directory)")) cache.files = std::move(*globs);
  if (c.has("max_age")) {
    const auto text = c.node("max_age").IsScalar() ? c.node("max_age").Scalar() : std::string();
    std::string why;
    if (auto age = parse_age(text, why))
      cache.max_age = *age;
    else
      c.error("max_age", "'max_age' must be an age: " + why, "max_age: 7d (ms, s, m, h, d or w; a bare number is seconds)");
  }
  if (auto scope = c.choice("scope", {"global", "recipe", "session"}))
    cache.scope = *scope == "recipe" ? cache_scope::recipe : *scope == "session" ? cache_scope::session : cache_scope::global;
  s.cache = std::make_shared<const step_cache>(std::move(cache));
}

void read_isolation(const field_reader& f, step& s) {
  const auto kind = f.choice("isolation", {"worktree", "copy", "none"});
  if (!kind) return;
  s.isolation = *kind == "worktree" ? isolation_kind::worktree : *kind == "copy" ? isolation_kind::copy : isolation_kind::none;
  if (s.isolation != isolation_kind::none && s.cache)
    f.error("isolation", "'isolation' and 'cache' do not go together: a reused output brings back no " +
                             std::string(s.isolation == isolation_kind::worktree ? "worktree and no branch" : "copy"),
            "drop one of them");
}

}  // namespace arun::io
