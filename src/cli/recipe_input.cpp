#include "recipe_input.hpp"
#include "secret_input.hpp"

#include "exit_codes.hpp"
#include "usage_hints.hpp"
#include "agents/agent_checks.hpp"
#include "recipe/discovery.hpp"
#include "output/diagnostic_render.hpp"
#include "recipe/recipe_chain.hpp"
#include "recipe/recipe_schema.hpp"
#include "recipe/shell_syntax.hpp"
#include "executor/step_environment.hpp"
#include "recipe/sub_recipes.hpp"

#include <arun/context_set.hpp>
#include <arun/unused_names.hpp>
#include <arun/validation.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

namespace arun::cli {

namespace {

bool variable_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

diagnostic secret_problem(std::string file, std::string message, std::string hint = {}) {
  diagnostic d;
  d.where.file = std::move(file);
  d.message = std::move(message);
  d.hint = std::move(hint);
  d.code = "secret";
  return d;
}

bool named(const std::vector<secret_value>& out, std::string_view name) {
  return std::any_of(out.begin(), out.end(), [&](const secret_value& s) { return s.name == name; });
}

// --secret KEY (the value from the terminal or stdin) and --secret KEY=VALUE (docs/watching.md#secrets).
void take_flag_secrets(const recipe_options& o, std::vector<secret_value>& out, std::vector<diagnostic>& problems) {
  bool warned_argv = false;
  for (const auto& text : o.secrets) {
    const auto eq = text.find('=');
    const auto name = text.substr(0, eq);
    if (!variable_name(name)) {
      // The text may be the value itself: it is never repeated.
      problems.push_back(secret_problem("--secret", eq == std::string::npos
                                                        ? "a --secret argument must be KEY (the value is read from stdin) "
                                                          "or KEY=VALUE, with KEY a variable name"
                                                        : "'--secret " + name + "=…' must be KEY=VALUE with KEY a variable name",
                                        "letters, digits and '_', not first a digit"));
      continue;
    }
    if (named(out, name)) continue;
    if (eq == std::string::npos) {
      std::string error;
      if (auto value = read_secret_from_stdin(name, error))
        out.push_back({name, std::move(*value), "flag", {}});
      else
        problems.push_back(secret_problem("--secret", "--secret " + name + ": " + error,
                                          "pipe the value in (one line), or use --secret-file " + name +
                                              "=PATH or --secret-env " + name));
      continue;
    }
    // Not a diagnostic of the recipe (--strict does not make it fail): a word on the command.
    if (!std::exchange(warned_argv, true))
      std::fprintf(stderr,
                   "arun: warning: --secret %s=… puts the value in arun's command line, where other processes can "
                   "read it (ps, /proc/PID/cmdline); give --secret %s alone to type it or pipe it on stdin, or use "
                   "--secret-file %s=PATH or --secret-env %s\n",
                   name.c_str(), name.c_str(), name.c_str(), name.c_str());
    out.push_back({name, text.substr(eq + 1), "flag", {}});
  }
}

// --secret-file KEY=PATH: the file's contents, its absolute path kept for a resume.
void take_file_secrets(const recipe_options& o, std::vector<secret_value>& out, std::vector<diagnostic>& problems) {
  for (const auto& text : o.secret_files) {
    const auto eq = text.find('=');
    const auto name = text.substr(0, eq);
    if (eq == std::string::npos || !variable_name(name) || eq + 1 == text.size()) {
      problems.push_back(secret_problem("--secret-file", "'--secret-file " + text + "' must be KEY=PATH with KEY a variable name"));
      continue;
    }
    if (named(out, name)) continue;
    std::string error, warning;
    const auto path = text.substr(eq + 1);
    auto value = read_secret_file(path, error, warning);
    if (!value) {
      problems.push_back(secret_problem("--secret-file", "--secret-file " + name + ": " + error));
      continue;
    }
    if (!warning.empty()) std::fprintf(stderr, "arun: warning: --secret-file %s: %s\n", name.c_str(), warning.c_str());
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(path, ec);
    out.push_back({name, std::move(*value), "file", ec ? path : absolute.lexically_normal().string()});
  }
}

// --secret, --secret-file, --secret-env and the recipe's `secrets:`, each name once (a flag wins over the
// environment); problems are diagnostics.
std::vector<secret_value> gather_secrets(const recipe_options& o, const recipe* r, std::vector<diagnostic>& problems) {
  std::vector<secret_value> out;
  auto known = [&](std::string_view name) {
    return std::any_of(out.begin(), out.end(), [&](const secret_value& s) { return s.name == name; });
  };
  take_flag_secrets(o, out, problems);
  take_file_secrets(o, out, problems);
  for (const auto& name : o.secret_envs) {
    if (!variable_name(name)) {
      problems.push_back(secret_problem("--secret-env", "'--secret-env " + name + "' must name an environment variable"));
      continue;
    }
    const char* value = std::getenv(name.c_str());
    if (!value) {
      problems.push_back(secret_problem("--secret-env", "--secret-env " + name + ": $" + name + " is not set in arun's environment",
                                        "export " + name + "=… before running arun"));
      continue;
    }
    if (!known(name)) out.push_back({name, value, "env", {}});
  }
  if (r)
    for (const auto& name : r->secrets) {
      if (known(name)) continue;
      if (const char* value = std::getenv(name.c_str())) {
        out.push_back({name, value, "env", {}});
      } else if (o.resolve_secrets) {
        auto d = secret_problem(r->secrets_where.file, "secret '" + name + "' is not set: the recipe takes it from $" + name,
                                "export " + name + "=…, or pass --secret " + name + " (read from stdin) or --secret-file " +
                                    name + "=PATH");
        d.where = r->secrets_where;
        d.key = "secrets";
        d.snippet = name;  // the caret goes under the name in the list
        problems.push_back(std::move(d));
      }
    }
  // A value of one to three characters would mask those characters in every text arun keeps
  // (ids, numbers, words) and protect nothing.
  for (auto it = out.begin(); it != out.end();) {
    if (!it->value.empty() && it->value.size() < 4) {
      problems.push_back(secret_problem(it->source == "flag"   ? "--secret"
                                        : it->source == "file" ? "--secret-file"
                                                               : "$" + it->name,
                                        "secret '" + it->name + "' is shorter than 4 characters: too short to mask",
                                        "a real secret is longer; pass a short value with --set"));
      it = out.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace

bool stderr_color(const std::string& choice) {
  if (choice == "always") return true;
  if (choice == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) && !(no_color && *no_color) && !(term && std::string_view(term) == "dumb");
}

recipe_input load_recipe_input(const recipe_options& o, bool for_run) {
  recipe_input in;
  // Before there is a file to point into: a message of arun's own, or its JSON diagnostic.
  auto refuse = [&](const char* code, const std::string& message, int exit_code) {
    if (o.diagnostics_json) {
      diagnostic d;
      d.where.file = o.recipe;
      d.message = message;
      d.code = code;
      in.diagnostics.push_back(io::diagnostic_to_json(d, nullptr));
    } else {
      std::fprintf(stderr, "arun: %s\n", message.c_str());
    }
    in.errors = 1;
    in.exit_code = exit_code;
    return std::move(in);
  };
  if (o.recipe.empty())
    return refuse("no-recipe", "no recipe given (usage: arun [run] RECIPE; see arun --help)", exit_no_recipe);
  // Only the recipe named here may be one of arun's shipped examples, never a parent it
  // extends or a sub-recipe it calls: those use `discovery`.
  const auto discovery = io::discovery_from_environment(o.recipe_dirs, o.working_dir);
  std::string path = o.recipe;
  if (!io::looks_like_path(o.recipe)) {
    const auto found = io::find_recipe(o.recipe, io::command_line_discovery(o.recipe_dirs, o.working_dir));
    if (found.path.empty()) {
      std::string dirs;
      for (const auto& d : found.looked_in) dirs += "\n  " + d;
      const auto why = io::invalid_name_reason(o.recipe);
      return refuse("recipe-not-found",
                    "recipe not found: " + o.recipe +
                        (why.empty() ? " (looked for " + o.recipe + ".yaml and " + o.recipe + ".yml in:" + dirs + ")"
                                     : ": " + why),
                    exit_not_found);
    }
    path = found.path;
  }
  struct stat st {};
  const bool saved = o.sources && o.sources->saved(path);  // resume: the session's copy
  if (!saved && ::stat(path.c_str(), &st) != 0) return refuse("recipe-not-found", "recipe not found: " + path, exit_not_found);
  in.path = path;
  io::load_limits limits;
  limits.max_bytes = o.max_recipe_bytes;
  limits.sources = o.sources;
  std::map<std::string, boost::json::value> documents;  // the files as JSON, for the schema check
  if (o.check_schema) limits.documents = &documents;
  auto loaded = io::load_recipe_chain(path, discovery, limits);
  std::vector<diagnostic> diagnostics = std::move(loaded.diagnostics);
  io::source_files files(o.sources);  // each file read once: the schema check, then the rendering
  validation_options vo;
  vo.lenient = o.lenient;
  std::vector<set_assignment> sets;
  std::vector<std::string> new_set_keys;  // --set keys given now, not kept from the session's run
  for (std::size_t i = 0; i < o.sets.size(); ++i) {
    const auto& text = o.sets[i];
    std::string error;
    if (auto a = parse_set(text, error)) {
      vo.set_keys.insert(a->path.front());
      if (i >= o.stored_sets) new_set_keys.push_back(a->path.front());
      sets.push_back(std::move(*a));
    } else {
      diagnostic d;
      d.where.file = "--set";
      d.message = error;
      d.code = "set-option";
      diagnostics.push_back(std::move(d));
    }
  }
  in.secrets = gather_secrets(o, loaded.value ? &*loaded.value : nullptr, diagnostics);
  for (const auto& s : in.secrets) vo.set_keys.insert(s.name);
  if (loaded.value) {
    // The context's keys as written: a --set key the recipe declares there is one it reads.
    boost::json::object written_context;
    for (const auto& kv : loaded.value->context) written_context.emplace(kv.key(), nullptr);
    for (const auto& a : sets) apply_set(loaded.value->context, a);
    for (const auto& s : in.secrets) loaded.value->context[s.name] = s.value;  // after --set: a secret wins
    auto children = io::scan_sub_recipes(*loaded.value, discovery, limits, &vo);
    diagnostics.insert(diagnostics.end(), children.diagnostics.begin(), children.diagnostics.end());
    vo.sub_recipe_names = std::move(children.declared);
    vo.dynamic_sub_recipes = children.dynamic_calls;
    auto more = validate_recipe(*loaded.value, vo);
    diagnostics.insert(diagnostics.end(), more.begin(), more.end());
    // limits, --limit, --set and output: names nothing uses (docs/running.md).
    name_use use;
    use.top = &*loaded.value;
    for (const auto& child : children.children) use.called.push_back(&child);
    use.dynamic_calls = vo.dynamic_sub_recipes;
    use.declared = declared_names(*loaded.value, vo);
    use.declared.insert(vo.sub_recipe_names.begin(), vo.sub_recipe_names.end());
    use.set_keys = std::move(new_set_keys);  // a resume's kept ones were judged when its run started
    use.context_before_set = &written_context;
    use.limit_options = o.limit_names;
    use.providers = o.limit_providers;
    for (const auto name : io::agent_cli_names)
      if (const auto cli = io::parse_agent_cli(name, "fake-agent"); std::holds_alternative<io::agent_cli>(cli))
        use.providers.push_back(io::provider_name(std::get<io::agent_cli>(cli)));
    more = unused_name_diagnostics(use);
    diagnostics.insert(diagnostics.end(), more.begin(), more.end());
    if (o.check_agents) {
      auto search = io::agent_search_from_environment(o.agent_dirs, o.working_dir);
      search.recipe_dir = recipe_directory(path);
      more = io::check_agent_references(*loaded.value, search, o.allow_missing_agents);
      diagnostics.insert(diagnostics.end(), more.begin(), more.end());
      for (const auto& child : children.children) {  // agents named in sub-recipes, at their lines
        more = io::check_agent_references(child, search, o.allow_missing_agents);
        diagnostics.insert(diagnostics.end(), more.begin(), more.end());
      }
    }
    // The recipe and every sub-recipe it names: what the checks below look at.
    std::vector<const recipe*> recipes = {&*loaded.value};
    for (const auto& child : children.children) recipes.push_back(&child);
    if (o.check_agent_cli) {
      if (auto missing = io::check_agent_cli(recipes, *o.check_agent_cli, io::current_environment(), severity::warning))
        diagnostics.push_back(std::move(*missing));
    }
    // `bash -n` on every bash script, for `validate` only: a run's first step should not wait
    // for a bash process per step of a large recipe (the run reports a syntax error anyway).
    if (o.check_shell && !has_errors(diagnostics)) {
      more = io::check_shell_syntax(recipes);
      diagnostics.insert(diagnostics.end(), more.begin(), more.end());
    }
    // The editor schema and arun must agree: checked last, so what arun refuses is explained
    // by arun's own messages, and a refusal of the schema alone shows where they differ.
    if (o.check_schema && !has_errors(diagnostics)) {
      for (const auto* r : recipes)
        if (const auto* text = files.text(r->source_path)) {
          const auto parsed = documents.find(r->source_path);
          more = parsed == documents.end() ? io::schema_diagnostics(*text, r->source_path)
                                           : io::schema_diagnostics(parsed->second, *text, r->source_path);  // a copy: a recipe may call itself
          diagnostics.insert(diagnostics.end(), more.begin(), more.end());
        }
    }
    if (for_run && !has_errors(diagnostics)) {
      more = unsupported_features(*loaded.value);
      diagnostics.insert(diagnostics.end(), more.begin(), more.end());
    }
    in.sub_recipes = std::move(children.children);
  }
  if (o.strict)
    for (auto& d : diagnostics) d.level = severity::error;  // --strict: warnings fail too
  for (const auto& d : diagnostics) (d.level == severity::warning ? in.warnings : in.errors)++;
  const bool failed = !loaded.value || has_errors(diagnostics);
  if (o.diagnostics_json)
    in.diagnostics = io::diagnostics_to_json(std::move(diagnostics), files);
  else
    std::fputs(io::render_diagnostics(std::move(diagnostics), files, stderr_color(o.color)).c_str(), stderr);
  if (failed) {
    in.exit_code = exit_usage;
    return in;
  }
  in.value = std::move(loaded.value);
  return in;
}

std::string recipe_directory(const std::string& path) {
  if (path.empty()) return {};
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  return ec ? std::string() : absolute.lexically_normal().parent_path().string();
}

}  // namespace arun::cli
