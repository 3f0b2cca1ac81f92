#include "recipe/step_reader.hpp"

#include "recipe/cache_fields.hpp"
#include "recipe/fleet_fields.hpp"
#include "recipe/resources_reader.hpp"
#include "recipe/yaml_json.hpp"

#include <arun/value_format.hpp>

#include <algorithm>
#include <regex>
#include <set>

namespace arun::io {
namespace {

using key_list = std::vector<std::string_view>;

const key_list common_keys = {
    "id", "type", "name", "description", "inputs", "outputs", "condition", "output", "timeout",
    "retry", "on_error", "continue_on_error", "nonfatal", "fatal", "when_tags", "parallel_group",
    "depends_on", "parse_json", "parse_json_required", "working_dir", "cwd", "env",
    "requires_approval", "approval_prompt", "approval_timeout", "approval_default", "on_approval_denied",
    "resources", "executor"};
const key_list bash_keys = {"command", "output_exit_code", "max_env_value_bytes"};
const key_list agent_keys = {"agent", "prompt", "mode", "model", "provider", "model_role",
                             "provider_preferences", "agent_config", "auto_stage", "spawn_mode", "schema_retries"};
// The fields of the steps that run a child of their own, bash and agent alike.
const key_list leaf_keys = {"output_schema", "limit_group", "cache", "isolation"};
const key_list recipe_keys = {"recipe", "context", "sub_context", "recursion", "recovery_on_failure"};
const key_list loop_keys = {"foreach", "as", "foreach_var", "max_concurrent", "parallel", "collect",
                            "max_iterations", "checkpoint_iterations", "while_condition",
                            "max_while_iterations", "break_when", "update_context", "steps"};

key_list all_step_keys() {
  key_list all = common_keys;
  for (const auto* list : {&bash_keys, &agent_keys, &leaf_keys, &recipe_keys, &loop_keys}) all.insert(all.end(), list->begin(), list->end());
  return all;
}

// docs/reference/recipe.md, "Step kinds": explicit type wins, then recipe, agent,
// prompt-without-command, command, loops.
std::optional<step_type> infer_type(const field_reader& f) {
  if (f.has("type")) {
    const auto t = f.text("type");
    if (!t) return std::nullopt;
    if (*t == "bash") return step_type::bash;
    if (*t == "agent") return step_type::agent;
    if (*t == "recipe") return step_type::recipe;
    const bool wild = *t == "skill" || *t == "loop";
    f.error("type", "unsupported step type '" + *t + "'",
            wild ? "neither older runner supports it: use foreach/while_condition with nested steps, or an agent step"
                 : "expected bash, agent or recipe");
    return std::nullopt;
  }
  if (f.has("recipe")) return step_type::recipe;
  if (f.has("agent")) return step_type::agent;
  if (f.has("prompt") && !f.has("command")) return step_type::agent;
  if (f.has("command")) return step_type::bash;
  if (f.has("steps")) return step_type::loop;
  // A pure gate (docs/reference/recipe.md, "Approval gates"): `requires_approval: false` alone is
  // no body at all.
  if (const auto gate = f.node("requires_approval"); gate && gate.IsScalar() && scalar_to_json(gate) == true)
    return step_type::gate;
  return std::nullopt;
}

// A field of another step type is a validation error (docs/reference/recipe.md, "Step kinds").
void refuse_foreign_fields(const field_reader& f, step_type type) {
  auto refuse = [&](const key_list& keys, std::string_view kind) {
    for (auto k : keys) {
      const std::string key(k);
      if (f.has(key.c_str()))
        f.error(key.c_str(), "'" + key + "' belongs to " + std::string(kind) + " steps, not to this " +
                                 (type == step_type::bash ? "bash" : type == step_type::agent ? "agent"
                                                            : type == step_type::recipe ? "recipe"
                                                            : type == step_type::gate ? "approval gate" : "loop") + " step");
    }
  };
  if (type != step_type::bash) refuse(bash_keys, "bash");
  if (type != step_type::agent) refuse(agent_keys, "agent");
  if (type != step_type::bash && type != step_type::agent) refuse(leaf_keys, "agent and bash");
  // `context` and `recursion` only make sense on recipe steps.
  if (type != step_type::recipe) refuse(recipe_keys, "recipe");
}

std::optional<on_error_policy> policy_from(const std::string& s) {
  if (s == "fail") return on_error_policy::fail;
  if (s == "continue") return on_error_policy::continue_run;
  if (s == "skip_remaining") return on_error_policy::skip_remaining;
  return std::nullopt;
}

void read_on_error(const field_reader& f, step& s) {
  if (auto v = f.choice("on_error", {"fail", "continue", "skip_remaining"})) s.on_error = *policy_from(*v);
  // continue_on_error, nonfatal: true and fatal: false all mean on_error: continue.
  std::optional<bool> nonfatal;
  for (const char* key : {"continue_on_error", "nonfatal"})
    if (auto b = f.boolean(key)) nonfatal = nonfatal.value_or(false) || *b;
  if (auto b = f.boolean("fatal")) nonfatal = nonfatal.value_or(false) || !*b;
  if (!nonfatal) return;
  if (f.has("on_error") && (s.on_error == on_error_policy::continue_run) != *nonfatal)
    f.error("on_error", "'on_error' contradicts continue_on_error/nonfatal/fatal on the same step");
  else if (*nonfatal)
    s.on_error = on_error_policy::continue_run;
}

void read_approval(const field_reader& f, step& s) {
  if (auto b = f.boolean("requires_approval")) s.approval.required = *b;
  if (auto p = f.text("approval_prompt")) s.approval.prompt = *p;
  // 0 is "wait forever", as the Python dialect documents it, not "decide at once".
  s.approval.timeout = f.seconds("approval_timeout");
  if (s.approval.timeout && *s.approval.timeout == 0) s.approval.timeout.reset();
  if (auto d = f.choice("approval_default", {"deny", "approve"}))
    s.approval.default_decision = *d == "approve" ? approval_decision::approve : approval_decision::deny;
  if (auto d = f.choice("on_approval_denied", {"fail", "skip_remaining", "continue"}))
    s.approval.on_denied = *policy_from(*d);
  if (!s.approval.required)
    for (const char* key : {"approval_prompt", "approval_timeout", "approval_default", "on_approval_denied"})
      if (f.has(key)) f.warning(key, "'" + std::string(key) + "' has no effect without requires_approval: true");
}

void read_common(const field_reader& f, step& s) {
  if (auto v = f.text("name")) s.name = *v;
  if (auto v = f.text("description")) s.description = *v;
  if (auto v = f.condition("condition")) s.condition = *v;
  s.output = f.text("output");
  if (auto t = f.seconds("timeout")) s.timeout = seconds_d(*t);
  if (f.has("retry")) {
    if (!f.node("retry").IsMap())
      f.error("retry", "'retry' must be a mapping (max_attempts, backoff, initial_delay, max_delay, jitter, on)");
    else
      s.retry = read_retry(field_reader(f.node("retry"), f.sink(), "the retry block of step '" + s.id + "'"));
  }
  read_on_error(f, s);
  if (auto tags = f.string_list("when_tags")) s.when_tags = *tags;
  s.parallel_group = f.text("parallel_group");
  if (auto deps = f.string_list("depends_on")) s.depends_on = *deps;
  if (auto b = f.boolean("parse_json")) s.parse_json = *b;
  if (auto b = f.boolean("parse_json_required")) s.parse_json_required = *b;
  if (f.has("working_dir") && f.has("cwd")) f.error("cwd", "give 'working_dir' or its alias 'cwd', not both");
  if (auto wd = f.text(f.has("cwd") ? "cwd" : "working_dir")) s.working_dir = *wd;
  s.env = read_env_map(f, "env");
  read_approval(f, s);
  s.resources = read_resources(f);
  if (f.has("executor")) {
    const auto t = f.text("executor");
    if (t && *t == "local")
      s.local_only = true;
    else if (t)
      f.error("executor", "a step's 'executor' can only be 'local' (its leaves stay on arun's machine), not '" + *t + "'",
              "the run's executor is chosen with --executor");
  }
}

// A loop step's `resources` and `executor: local` hold for every step of its body; a body
// step's own fields win.
void pass_placement_down(std::vector<step>& body, const step& loop) {
  if (!loop.resources && !loop.local_only) return;
  for (auto& child : body) {
    child.resources = inherit_resources(child.resources, loop.resources);
    child.local_only = child.local_only || loop.local_only;
    pass_placement_down(child.steps, loop);
  }
}

void read_agent(const field_reader& f, step& s) {
  if (auto v = f.text("agent")) s.agent.agent = *v;
  if (auto v = f.text("prompt")) s.agent.prompt = *v;
  for (auto [key, field] : {std::pair{"mode", &s.agent.mode}, {"model", &s.agent.model},
                            {"provider", &s.agent.provider}, {"model_role", &s.agent.model_role}})
    if (auto v = f.text(key)) *field = *v;
  s.agent.provider_preferences = f.json("provider_preferences");
  s.agent.agent_config = f.json("agent_config");
  if (auto b = f.boolean("auto_stage")) s.agent.auto_stage = *b;
  // The Python dialect's way to ask for an agent in a process of its own, which is how arun
  // always runs an agent CLI: `subprocess` is read and changes nothing; any other value is a
  // mistake, refused as that dialect refuses it.
  if (auto mode = f.text("spawn_mode"); mode && *mode != "subprocess")
    f.error("spawn_mode", "'spawn_mode' must be 'subprocess' or omitted, got '" + *mode + "'");
  if (s.agent.prompt.empty() && !f.has("prompt")) f.error("prompt", "agent step '" + s.id + "' needs a 'prompt'");
}

void read_recipe_call(const field_reader& f, step& s) {
  if (auto v = f.text("recipe", true)) s.call.recipe = *v;
  if (f.has("context") && f.has("sub_context"))
    f.error("sub_context", "give 'context' or its alias 'sub_context', not both");
  if (auto ctx = f.object(f.has("sub_context") ? "sub_context" : "context")) s.call.context = std::move(*ctx);
  if (f.has("recursion")) {
    field_reader r(f.node("recursion"), f.sink(), "the recursion block of step '" + s.id + "'");
    if (!f.node("recursion").IsMap()) {
      f.error("recursion", "'recursion' must be a mapping with max_depth");
    } else {
      r.check_keys({"max_depth"});
      if (auto d = r.integer("max_depth", 1, 1000)) s.call.max_depth = static_cast<int>(*d);
    }
  }
  s.call.recovery_on_failure = f.json("recovery_on_failure");
  // Its timeout is a duration like every other (docs/reference/recipe.md, "Durations"): kept
  // as seconds, a bad one refused at its own position.
  if (auto* o = s.call.recovery_on_failure.if_object(); o && o->contains("timeout")) {
    field_reader r(f.node("recovery_on_failure"), f.sink(), "the recovery_on_failure of step '" + s.id + "'");
    if (auto t = r.seconds("timeout"))
      (*o)["timeout"] = *t;
    else
      o->erase("timeout");  // reported: not checked again as a number
  }
}

void read_loops(const field_reader& f, step& s, recipe_sources* sources) {
  const bool has_foreach = f.has("foreach"), has_while = f.has("while_condition");
  if (has_foreach && has_while) f.error("while_condition", "a step loops with 'foreach' or 'while_condition', not both");
  if (has_foreach) {
    foreach_spec fe;
    fe.items = f.json("foreach");
    // `foreach: {lines: TEXT}`: the lines of a text (docs/reference/recipe.md, foreach), kept
    // in that form.
    const auto* o = fe.items.if_object();
    const bool lines = o && o->size() == 1 && o->contains("lines") && o->at("lines").is_string();
    if (!lines && !fe.items.is_string() && !fe.items.is_array()) {
      f.error("foreach", "'foreach' must be a list, a template such as \"{{files}}\", or {lines: TEXT} for the lines of a text",
              fe.items.is_object() ? "the mapping form has one key, lines, whose value is a text: {lines: \"{{files}}\"}"
                                   : std::string());
    }
    if (f.has("as") && f.has("foreach_var")) f.error("foreach_var", "give 'as' or its alias 'foreach_var', not both");
    if (auto as = f.text(f.has("foreach_var") ? "foreach_var" : "as")) fe.as = *as;
    if (f.has("max_concurrent") && f.has("parallel"))
      f.error("parallel", "give 'max_concurrent' or its alias 'parallel', not both");
    if (auto n = f.integer("max_concurrent", 1, 100000)) fe.max_concurrent = static_cast<int>(*n);
    if (const auto p = f.node("parallel")) {
      const auto v = p.IsScalar() ? f.json("parallel") : boost::json::value();
      if (v.is_bool()) {
        fe.max_concurrent = v.get_bool() ? 0 : 1;  // true: the global limit
      } else if (v.is_int64() && v.get_int64() >= 1 && v.get_int64() <= 100000) {
        fe.max_concurrent = static_cast<int>(v.get_int64());
      } else {
        const auto* text = v.if_string();
        const bool yaml11 = text && (*text == "yes" || *text == "no" || *text == "on" || *text == "off");
        f.error("parallel", "'parallel' must be true (the global limit), false (one at a time) or a whole number from 1 "
                            "to 100000",
                yaml11 ? "YAML 1.2 reads '" + std::string(*text) + "' as text: write " +
                             (*text == "yes" || *text == "on" ? "true" : "false")
                       : std::string());
      }
    }
    fe.collect = f.text("collect");
    if (auto n = f.integer("max_iterations", 1, 10'000'000)) fe.max_iterations = static_cast<int>(*n);
    // The Python dialect writes a boolean: true checkpoints every iteration, false none.
    if (const auto v = f.has("checkpoint_iterations") ? f.json("checkpoint_iterations") : boost::json::value(); v.is_bool()) {
      if (v.get_bool()) fe.checkpoint_iterations = 1;
    } else if (auto n = f.integer("checkpoint_iterations", 1, 10'000'000)) {
      fe.checkpoint_iterations = static_cast<int>(*n);
    }
    // The Python dialect refuses checkpoints on a loop that runs items side by side (its
    // parallel loop is all-or-nothing); refusing it too keeps a recipe arun accepts one the
    // older runner accepts. arun journals every finished iteration, parallel or not.
    if (fe.checkpoint_iterations && fe.max_concurrent != 1)
      f.error("checkpoint_iterations", "'checkpoint_iterations' cannot be used with a loop that runs items side by side",
              "remove 'checkpoint_iterations': arun journals every finished iteration of any loop, so a resume "
              "repeats none of them (the Python runner refuses this pair)");
    s.foreach = std::move(fe);
  }
  if (has_while) {
    while_spec w;
    if (auto c = f.condition("while_condition")) w.condition = *c;
    // `max_iterations` is the Python dialect's name for the same cap.
    if (f.has("max_while_iterations") && f.has("max_iterations"))
      f.error("max_iterations", "give 'max_while_iterations' or its alias 'max_iterations', not both");
    const char* cap = f.has("max_iterations") ? "max_iterations" : "max_while_iterations";
    if (auto n = f.integer(cap, 1, 10'000'000)) w.max_iterations = static_cast<int>(*n);
    if (auto b = f.condition("break_when")) w.break_when = *b;
    if (auto u = f.object("update_context")) w.update_context = std::move(*u);
    s.loop_while = std::move(w);
  }
  // Loop settings without a loop are mistakes, not silent no-ops.
  for (const char* key : {"as", "foreach_var", "max_concurrent", "parallel", "collect", "max_iterations",
                          "checkpoint_iterations"})
    if (!has_foreach && f.has(key) && !(has_while && std::string_view(key) == "max_iterations"))
      f.error(key, "'" + std::string(key) + "' needs 'foreach' on the same step");
  for (const char* key : {"max_while_iterations", "break_when", "update_context"})
    if (!has_while && f.has(key)) f.error(key, "'" + std::string(key) + "' needs 'while_condition' on the same step");
  if (f.has("steps")) {
    if (!has_foreach && !has_while)
      f.error("steps", "nested 'steps' need 'foreach' or 'while_condition' on the same step");
    const auto body = f.node("steps");
    if (!body.IsSequence() || body.size() == 0) {
      f.error("steps", "'steps' must be a non-empty list of steps");
      return;
    }
    for (const auto& child : body)
      if (auto c = read_step(child, f.sink(), sources)) s.steps.push_back(std::move(*c));
    pass_placement_down(s.steps, s);
  }
}

}  // namespace

std::optional<retry_policy> read_retry(const field_reader& f) {
  f.check_keys({"max_attempts", "backoff", "initial_delay", "max_delay", "jitter", "on"});
  retry_policy r;
  if (auto n = f.integer("max_attempts", 1, 1000)) r.max_attempts = static_cast<int>(*n);
  if (auto b = f.choice("backoff", {"exponential", "linear", "constant"}))
    r.backoff = *b == "linear" ? backoff_kind::linear : *b == "constant" ? backoff_kind::constant : backoff_kind::exponential;
  if (auto d = f.seconds("initial_delay")) r.initial_delay = *d;
  if (auto d = f.seconds("max_delay")) r.max_delay = *d;
  if (const auto j = f.node("jitter")) {
    const auto v = f.json("jitter");
    if (v.is_bool())
      r.jitter = v.get_bool() ? 1.0 : 0.0;
    else if (v.is_number() && v.to_number<double>() >= 0 && v.to_number<double>() <= 1)
      r.jitter = v.to_number<double>();
    else
      f.error("jitter", "'jitter' must be true, false or a fraction from 0 to 1");
  }
  if (const auto on = f.node("on")) {
    r.on.clear();
    if (!on.IsSequence()) {
      f.error("on", "'on' must be a list of failure, timeout, rate_limit or exit codes");
      return r;
    }
    for (const auto& item : on) {
      const auto v = item.IsScalar() ? scalar_to_json(item) : boost::json::value();
      if (v.is_int64())
        r.on.emplace_back(static_cast<int>(v.get_int64()));
      else if (v.is_string() && v.get_string() == "failure")
        r.on.emplace_back(retry_trigger::failure);
      else if (v.is_string() && v.get_string() == "timeout")
        r.on.emplace_back(retry_trigger::timeout);
      else if (v.is_string() && v.get_string() == "rate_limit")
        r.on.emplace_back(retry_trigger::rate_limit);
      else
        f.sink().error(item.Mark(), "retry 'on' entries are failure, timeout, rate_limit or an exit code", "on");
    }
  }
  if (r.max_delay < r.initial_delay)
    f.warning("max_delay", "'max_delay' is below 'initial_delay': every delay will be max_delay");
  return r;
}

std::optional<step> read_step(const yaml::node& node, diagnostic_sink& sink, recipe_sources* sources) {
  if (!node.IsMap()) {
    sink.error(node.Mark(), "a step must be a mapping with an 'id' and a body (command, prompt, agent, recipe or steps)");
    return std::nullopt;
  }
  step s;
  s.where = sink.at(node.Mark());
  try {  // the step as written, for content keys (resume --reload)
    std::size_t budget = 1u << 20;
    s.definition_hash = content_hash(to_compact_json(yaml_to_json(node, budget)));
  } catch (const std::exception&) {
    // Too large to fingerprint: no key, so a reload always runs it again.
  }
  // Values, not keys: cross-field diagnostics (ids, depends_on, references) are about values.
  for (const auto& kv : node) {
    const auto place = sink.at(kv.second.Mark());
    s.key_where.push_back({kv.first.Scalar(), place.line, place.column});
  }
  if (auto id = field_reader(node, sink, "every step").text("id", true)) s.id = *id;
  const field_reader f(node, sink, s.id.empty() ? "a step" : "step '" + s.id + "'");
  f.check_keys(all_step_keys());
  read_common(f, s);
  const auto type = infer_type(f);
  if (!type) {
    if (!f.has("type"))
      f.sink().error(node.Mark(), "step '" + s.id + "' has no body: add 'command', 'prompt', 'agent', 'recipe' or 'steps'",
                     {}, "a step needs something to run");
    return s;
  }
  s.type = *type;
  if (s.type != step_type::loop) refuse_foreign_fields(f, s.type);
  switch (s.type) {
    case step_type::bash:
      if (auto c = f.text("command", true)) s.command = *c;
      s.output_exit_code = f.text("output_exit_code");
      if (auto n = f.integer("max_env_value_bytes", 1, 64 << 20)) s.max_env_value_bytes = static_cast<std::size_t>(*n);
      read_output_schema(f, s, sources);
      read_limit_group(f, s);
      read_cache(f, s);
      read_isolation(f, s);
      break;
    case step_type::agent:
      read_agent(f, s);
      read_output_schema(f, s, sources);
      read_schema_retries(f, s);
      read_limit_group(f, s);
      read_cache(f, s);
      read_isolation(f, s);
      break;
    case step_type::recipe: read_recipe_call(f, s); break;
    default: break;
  }
  read_loops(f, s, sources);
  if (s.type == step_type::loop) refuse_foreign_fields(f, step_type::loop);
  if (s.type == step_type::gate)
    for (const char* key : {"resources", "executor"})
      if (f.has(key)) f.warning(key, "'" + std::string(key) + "' has no effect on an approval gate: it runs nothing");
  return s;
}

}  // namespace arun::io
