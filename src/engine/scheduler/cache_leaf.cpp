// Cached leaves (a step's `cache:`): the key of an instance is a hash of what decides its
// result — the step type, the rendered command (with the values of the variables it reads)
// or prompt, the agent, model and CLI with the persona, the env, the working directory, the
// contents of the files `cache.files` names and the values of `cache.key` — so a later run
// of the same work reuses the stored output instead of starting a child. Built from the
// rendered instance, never from the YAML text: how a recipe is formatted is not content.
#include "scheduler/step_executor.hpp"

#include <arun/value_format.hpp>

#include <map>

namespace arun::engine {
namespace {

// `name len:value` lines: a value holding a newline cannot pass for another field.
void field(std::string& m, std::string_view name, std::string_view value) {
  m.append(name).append(" ").append(std::to_string(value.size())).append(":").append(value).append("\n");
}

// The last value of each name, in name order: the order env keys are written in is not
// content, and a later entry of the same name wins, as when the child starts.
void env_fields(std::string& m, const std::vector<std::pair<std::string, std::string>>& env) {
  std::map<std::string_view, std::string_view> last;
  for (const auto& [name, value] : env) last[name] = value;
  for (const auto& [name, value] : last) field(m, "env " + std::string(name), value);
}

}  // namespace

step_executor::cache_probe step_executor::probe_cache(const step& s, scope sc, const std::string& instance,
                                                      const bash_invocation& inv) {
  if (!s.cache || !rs_.options.cache) return {};
  std::string m = "arun cache key 1\ntype bash\n";
  field(m, "command", inv.command);
  // Every variable the script gets, in name order: the context is exported whole, and a
  // script it runs (`./deploy.sh` reading $TARGET) may read any of it without naming it.
  std::map<std::string_view, std::string_view> exported;
  for (const auto& v : inv.exports) exported[v.name] = v.value;
  for (const auto& [name, value] : exported) field(m, "var " + std::string(name), value);
  env_fields(m, inv.env);
  return finish_probe(s, sc, instance, std::move(m), rs_.runner.identity(inv));
}

step_executor::cache_probe step_executor::probe_cache(const step& s, scope sc, const std::string& instance,
                                                      const agent_invocation& inv) {
  if (!s.cache || !rs_.options.cache) return {};
  std::string m = "arun cache key 1\ntype agent\n";
  field(m, "agent", inv.agent);
  field(m, "prompt", inv.prompt);
  field(m, "model", inv.model);
  field(m, "provider", inv.provider);
  field(m, "provider_preferences", inv.provider_preferences.is_null() ? "" : to_compact_json(inv.provider_preferences));
  // How the reply is judged decides which reply the calls end with (parse_json's reminder,
  // output_schema's corrections): another schema is other work.
  field(m, "parse_json", s.parse_json ? (s.parse_json_required ? "required" : "best_effort") : "");
  field(m, "output_schema", s.output_schema ? to_compact_json(s.output_schema->document()) : "");
  field(m, "schema_retries", std::to_string(s.schema_retries));
  env_fields(m, inv.env);
  return finish_probe(s, sc, instance, std::move(m), rs_.runner.identity(inv));
}

step_executor::cache_probe step_executor::finish_probe(const step& s, scope sc, const std::string& instance,
                                                       std::string material, const leaf_identity& identity) {
  cache_probe probe;
  if (!identity.error.empty()) {
    probe.warnings.push_back("cache: not used for this instance: " + identity.error);
    return probe;
  }
  field(material, "cwd", identity.working_dir);
  field(material, "runner", identity.text);
  const auto& working_dir = identity.working_dir;
  const auto& c = *s.cache;
  const auto builtins = step_builtins(s, instance);
  const auto in = view(sc, builtins);
  // Renders one `key`/`files` entry; false (with a warning) when it cannot be rendered.
  auto render = [&](std::string_view what, const std::string& text, std::string& out) {
    auto r = render_text(text, in);
    probe.warnings.insert(probe.warnings.end(), r.warnings.begin(), r.warnings.end());
    if (!r.ok()) {
      probe.warnings.push_back("cache: not used for this instance: " + std::string(what) + ": " + r.error);
      return false;
    }
    out = std::move(r.text);
    return true;
  };
  for (const auto& k : c.key) {
    std::string value;
    if (!render("cache.key", k, value)) return probe;
    field(material, "key", value);
  }
  if (!c.files.empty()) {
    std::vector<std::string> globs;
    for (const auto& g : c.files) {
      std::string glob;
      if (!render("cache.files", g, glob)) return probe;
      globs.push_back(std::move(glob));
    }
    std::string error;
    auto digest = rs_.options.cache->digest_files(globs, working_dir, probe.warnings, error);
    if (!error.empty()) {
      probe.warnings.push_back("cache: not used for this instance: " + error);
      return probe;
    }
    field(material, "files", digest);
  }
  switch (c.scope) {
    case cache_scope::global: break;
    case cache_scope::recipe: field(material, "recipe", frame_.r.name); break;
    case cache_scope::session: field(material, "session", rs_.options.session_id); break;
  }
  probe.key = rs_.options.cache->hash(material);
  const bool refresh = rs_.options.refresh_cache && rs_.options.refresh_cache(s.id, instance);
  if (!refresh) probe.hit = rs_.options.cache->find(probe.key, c.max_age);
  return probe;
}

std::optional<instance_outcome> step_executor::cached_outcome(const step& s, const std::string& instance,
                                                             cached_output&& hit) {
  leaf_outcome o;
  o.started = true;  // as if: the outcome is judged as the stored run's was
  o.exit_code = 0;
  o.stdout_text = std::move(hit.stdout_text);
  auto out = to_outcome(s, instance, std::move(o), rs_.options);
  // Judged now as it was then: an output the step's present parse_json or output_schema
  // refuses is no hit (the step runs, and an agent is asked again as it would be).
  if (out.result.status != step_status::completed) return std::nullopt;
  out.result.cached = true;
  out.result.attempts = 0;  // no child ran
  out.result.exit_code = std::nullopt;
  return out;
}

bool step_executor::holds_secret(scope sc, std::string_view text) const {
  // The host knows every form a secret takes in text (one line of it, its JSON escape, its
  // CRLF form: docs/caching.md); the names below are the fallback for an embedding without one.
  if (rs_.options.holds_secret) return rs_.options.holds_secret(text);
  auto check = [&](std::string_view name) {
    const auto* v = sc.context ? sc.context->if_contains(name) : nullptr;
    return v && v->is_string() && !v->get_string().empty() && text.find(std::string_view(v->get_string())) != std::string_view::npos;
  };
  for (const auto& name : rs_.options.secret_names)
    if (check(name)) return true;
  for (const auto& name : frame_.r.secrets)
    if (check(name)) return true;
  return false;
}

void step_executor::remember_output(const step& s, scope sc, const std::string& instance, const cache_probe& probe,
                                    const instance_outcome& o, const std::string& stdout_text,
                                    std::chrono::nanoseconds took) {
  // Only a clean completion: a degraded parse_json or a failure is never worth reusing.
  if (probe.key.empty() || o.result.status != step_status::completed || o.result.truncated) return;
  // A secret never goes to the cache (which outlives the session, unmasked): an output the
  // masker would change, in whatever form it holds a secret, is not kept.
  if (holds_secret(sc, stdout_text)) {
    warn(s, instance, {"cache: the output holds a secret (or a form of one arun masks), so it is not kept in "
                       "the cache"});
    return;
  }
  cached_output entry;
  entry.stdout_text = stdout_text;
  entry.duration = took;
  entry.recipe = frame_.r.name;
  entry.instance = instance;
  entry.session = rs_.options.session_id;
  entry.created = std::chrono::system_clock::now();
  if (auto why = rs_.options.cache->store(probe.key, entry); !why.empty()) warn(s, instance, {why});
}

}  // namespace arun::engine
