// `arun explain RECIPE --output-format json`: the plan `explain` prints, as data. A key
// appears only when the recipe says something about it, so a tool can tell "no timeout" from
// "timeout 0".
#include "recipe/recipe_views.hpp"

#include "output/result_format.hpp"

#include <arun/plan.hpp>

#include <boost/json/array.hpp>

namespace arun::io {
namespace {

namespace json = boost::json;

json::array strings(const std::vector<std::string>& v) { return json::array(v.begin(), v.end()); }

json::object pairs(const std::vector<std::pair<std::string, std::string>>& v) {
  json::object o;
  for (const auto& [k, value] : v) o[k] = value;
  return o;
}

std::string_view on_error_name(on_error_policy p) {
  switch (p) {
    case on_error_policy::fail: return "fail";
    case on_error_policy::continue_run: return "continue";
    case on_error_policy::skip_remaining: return "skip_remaining";
  }
  return "fail";
}

json::object retry_to_json(const retry_policy& r) {
  const char* backoff = r.backoff == backoff_kind::linear     ? "linear"
                        : r.backoff == backoff_kind::constant ? "constant"
                                                              : "exponential";
  return {{"max_attempts", r.max_attempts}, {"backoff", backoff},     {"initial_delay", r.initial_delay},
          {"max_delay", r.max_delay},       {"jitter", r.jitter}};
}

json::object approval_to_json(const std::string& prompt, const std::optional<double>& timeout, approval_decision d) {
  json::object o{{"prompt", prompt}, {"default", d == approval_decision::approve ? "approve" : "deny"}};
  o["timeout"] = timeout ? json::value(*timeout) : json::value(nullptr);
  return o;
}

json::array steps_to_json(const std::vector<step>& steps);

json::object cache_to_json(const step_cache& c) {
  json::object o{{"key", strings(c.key)},
                 {"scope", c.scope == cache_scope::recipe ? "recipe" : c.scope == cache_scope::session ? "session" : "global"},
                 {"files", strings(c.files)}};
  o["max_age"] = c.max_age ? json::value(c.max_age->count()) : json::value(nullptr);
  return o;
}

json::object step_to_json(const step& s) {
  json::object o{{"step_id", s.id}, {"type", to_string(s.type)}};
  auto text = [&](const char* key, const std::string& value) {
    if (!value.empty()) o[key] = value;
  };
  text("name", s.name);
  text("description", s.description);
  text("condition", s.condition);
  switch (s.type) {
    case step_type::bash: o["command"] = s.command; break;
    case step_type::agent: {
      json::object agent{{"prompt", s.agent.prompt}};
      for (auto [key, value] : {std::pair{"agent", &s.agent.agent}, std::pair{"mode", &s.agent.mode},
                                std::pair{"model", &s.agent.model}, std::pair{"provider", &s.agent.provider},
                                std::pair{"model_role", &s.agent.model_role}})
        if (!value->empty()) agent[key] = *value;
      o["agent"] = std::move(agent);
      break;
    }
    case step_type::recipe:
      o["recipe"] = s.call.recipe;
      if (!s.call.context.empty()) o["context"] = s.call.context;
      break;
    case step_type::loop:
    case step_type::gate: break;
  }
  if (s.approval.required) o["approval"] = approval_to_json(s.approval.prompt, s.approval.timeout, s.approval.default_decision);
  if (s.foreach) {
    json::object f{{"as", s.foreach->as}, {"items", s.foreach->items}, {"max_concurrent", s.foreach->max_concurrent},
                   {"max_iterations", s.foreach->max_iterations}};
    if (s.foreach->collect) f["collect"] = *s.foreach->collect;
    o["foreach"] = std::move(f);
  }
  if (s.loop_while) {
    json::object w{{"condition", s.loop_while->condition}, {"max_iterations", s.loop_while->max_iterations}};
    if (!s.loop_while->break_when.empty()) w["break_when"] = s.loop_while->break_when;
    if (!s.loop_while->update_context.empty()) w["update_context"] = s.loop_while->update_context;
    o["while"] = std::move(w);
  }
  if (s.parallel_group) o["parallel_group"] = *s.parallel_group;
  if (!s.depends_on.empty()) o["depends_on"] = strings(s.depends_on);
  if (s.output) o["output"] = *s.output;
  if (s.output_exit_code) o["output_exit_code"] = *s.output_exit_code;
  if (s.parse_json) o["parse_json"] = s.parse_json_required ? "required" : "best_effort";
  if (s.timeout) o["timeout"] = s.timeout->count();
  if (s.retry) o["retry"] = retry_to_json(*s.retry);
  if (s.on_error != on_error_policy::fail) o["on_error"] = on_error_name(s.on_error);
  if (!s.when_tags.empty()) o["tags"] = strings(s.when_tags);
  text("working_dir", s.working_dir);
  if (!s.env.empty()) o["env"] = pairs(s.env);
  if (s.output_schema) {
    o["output_schema"] = json::object{{"origin", s.output_schema->origin()}, {"schema", s.output_schema->document()}};
    if (s.type == step_type::agent) o["schema_retries"] = s.schema_retries;
  }
  text("limit_group", s.limit_group);
  if (s.cache) o["cache"] = cache_to_json(*s.cache);
  if (s.isolation != isolation_kind::none) o["isolation"] = s.isolation == isolation_kind::worktree ? "worktree" : "copy";
  if (!s.steps.empty()) o["steps"] = steps_to_json(s.steps);
  return o;
}

json::array steps_to_json(const std::vector<step>& steps) {
  json::array out;
  out.reserve(steps.size());
  for (const auto& s : steps) out.push_back(step_to_json(s));
  return out;
}

}  // namespace

json::object explain_to_json(const recipe& r) {
  json::object about{{"name", r.name},
                     {"version", r.version},
                     {"description", r.description},
                     {"file", r.source_path},
                     {"execution", r.execution == execution_mode::dag ? "dag" : "sequential"},
                     {"context", r.context}};
  if (!r.author.empty()) about["author"] = r.author;
  if (!r.tags.empty()) about["tags"] = strings(r.tags);
  if (!r.env.empty()) about["env"] = pairs(r.env);
  if (r.default_step_timeout) about["default_step_timeout"] = r.default_step_timeout->count();
  if (!r.inputs.is_null()) about["inputs"] = r.inputs;
  if (!r.parameters.is_null()) about["parameters"] = r.parameters;
  if (!r.limits.empty()) {
    json::object limits;
    for (const auto& [name, n] : r.limits) limits[name] = n;
    about["limits"] = std::move(limits);
  }
  if (r.budget.cost_usd || r.budget.tokens) {
    json::object budget;
    if (r.budget.cost_usd) budget["cost_usd"] = *r.budget.cost_usd;
    if (r.budget.tokens) budget["tokens"] = *r.budget.tokens;
    about["budget"] = std::move(budget);
  }
  if (r.output) about["output"] = *r.output;
  auto doc = document_header();
  doc["recipe"] = std::move(about);
  doc["steps"] = steps_to_json(r.steps);
  json::array stages;
  for (const auto& st : r.stages) {
    json::object o{{"name", st.name}, {"description", st.description}, {"condition", st.condition}};
    if (st.approval.required) {
      auto gate = approval_to_json(st.approval.prompt, st.approval.timeout, st.approval.default_decision);
      gate["when"] = stage_gate_runs_after(st, r) ? "after" : "before";
      o["approval"] = std::move(gate);
    }
    o["steps"] = steps_to_json(st.steps);
    stages.push_back(std::move(o));
  }
  doc["stages"] = std::move(stages);
  return doc;
}

}  // namespace arun::io
