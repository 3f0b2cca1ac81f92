// Context export to shell steps (docs/reference/templates.md, "The context in the environment") and
// the plan joining it with a script's own variables (docs/reference/templates.md,
// "Templates in bash commands"): names, aliases, protected names, collisions and size limits.
#include <catch2/catch.hpp>

#include "shell/context_export.hpp"

#include <boost/json/parse.hpp>

#include <map>

using namespace arun::engine;

namespace {

std::map<std::string, std::string> by_name(const context_export& e) {
  std::map<std::string, std::string> m;
  for (const auto& v : e.variables) m[v.name] = v.value;
  return m;
}

boost::json::object object(std::string_view json) { return boost::json::parse(json).as_object(); }

bool has_warning(const context_export& e, std::string_view text) {
  for (const auto& w : e.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("context keys are exported as RECIPE_VAR_ names, nested objects flattened") {
  const auto e = export_context(object(R"({
    "repo-path": "/r", "a.b": 1, "Mixed": "m", "flag": true, "none": null, "list": [1, "x"],
    "obj": {"status": "ok", "in-ner": {"x": 1.5}}, "with space": "s"
  })"));
  const std::map<std::string, std::string> expected = {
      {"RECIPE_VAR_repo_path", "/r"},
      {"REPO_PATH", "/r"},
      {"RECIPE_VAR_a__b", "1"},
      {"A__B", "1"},
      {"RECIPE_VAR_Mixed", "m"},
      {"MIXED", "m"},
      {"RECIPE_VAR_flag", "true"},
      {"FLAG", "true"},
      {"RECIPE_VAR_none", ""},
      {"NONE", ""},
      {"RECIPE_VAR_list", R"([1,"x"])"},
      {"RECIPE_VAR_obj", R"({"status":"ok","in-ner":{"x":1.5}})"},
      {"RECIPE_VAR_obj__status", "ok"},
      {"RECIPE_VAR_obj__in_ner", R"({"x":1.5})"},
      {"RECIPE_VAR_obj__in_ner__x", "1.5"},
      {"RECIPE_VAR_with_space", "s"},
      {"WITH_SPACE", "s"},
  };
  CHECK(by_name(e) == expected);
  CHECK(e.warnings.empty());
  CHECK(std::is_sorted(e.variables.begin(), e.variables.end(),
                       [](const auto& a, const auto& b) { return a.name < b.name; }));
  for (const auto& v : e.variables) CHECK_FALSE(v.by_file);
}

TEST_CASE("upper-case aliases never take a protected name") {
  const auto e = export_context(object(R"({
    "path": 1, "home": 1, "ifs": 1, "ps4": 1, "prompt_command": 1, "bash_env": 1, "lc_all": 1,
    "Lc_Messages": 1, "ld_preload": 1, "dyld_insert_libraries": 1, "arun_session_dir": 1,
    "amplihack_home": 1, "glibc_tunables": 1, "node_options": 1, "ci": 1, "debian_frontend": 1,
    "bash_xtracefd": 1, "recipe_var_x": 1, "1st": 1, "ok": 1
  })"));
  const auto vars = by_name(e);
  CHECK(vars.contains("RECIPE_VAR_path"));
  CHECK(vars.contains("RECIPE_VAR_ld_preload"));
  CHECK(vars.contains("RECIPE_VAR_1st"));
  CHECK(vars.contains("OK"));
  for (const auto& [name, value] : vars) {
    INFO(name);
    CHECK((name.starts_with("RECIPE_VAR_") || name == "OK"));
  }
  for (std::string_view name : {"PATH", "LC_CTYPE", "LD_LIBRARY_PATH", "DYLD_X", "ARUN_X", "AMPLIHACK_X", "BASH_ENV",
                                "PS1", "TMP", "SHELLOPTS", "PERL5OPT", "RUBYOPT", "PYTHONPATH", "RECIPE_VAR_Y"})
    CHECK_FALSE(alias_allowed(name));
  for (std::string_view name : {"REPO_PATH", "LANGUAGE_X", "PATHS", "HOME_DIR"}) CHECK(alias_allowed(name));
}

TEST_CASE("upper-case aliases never take a variable that configures a program") {
  for (std::string_view name :
       {"GIT_CONFIG_PARAMETERS", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_DIR", "SSH_AUTH_SOCK", "SSH_ASKPASS",
        "LD_PRELOAD", "LD_AUDIT", "BASH_ENV", "BASH_FUNC_x%%", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB", "PERL5DB",
        "PERLLIB", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH", "NPM_CONFIG_USERCONFIG", "GLIBC_TUNABLES", "MALLOC_CHECK_",
        "PS4", "PROMPT_COMMAND", "SHELLOPTS", "IFS", "ENV", "CDPATH", "TMOUT", "HISTFILE", "GOFLAGS", "CGO_CFLAGS",
        "RUSTC_WRAPPER", "CARGO_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "DOCKER_HOST", "KUBECONFIG",
        "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "CLAUDE_CONFIG_DIR", "GITHUB_TOKEN",
        "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "OPENSSL_CONF",
        "GCONV_PATH", "TZ", "MAKEFLAGS", "CC", "LDFLAGS", "PAGER", "LESSOPEN", "EDITOR", "XDG_CONFIG_HOME",
        "SUDO_ASKPASS", "TERMINFO", "PIP_INDEX_URL", "CONDA_PREFIX", "EMAIL", "TF_CLI_ARGS", "SLURM_CONF"})
    CHECK_FALSE(alias_allowed(name));
  // Every variable a program runs as code, as the code-position check lists them (a tar or
  // make in a later step would run a value a step printed).
  for (std::string_view name : {"TAR_OPTIONS", "GNUMAKEFLAGS", "PSQL_EDITOR", "CVSEDITOR", "DELTA_PAGER", "BAT_PAGER",
                                "GVIMINIT", "FCEDIT", "MY_TOOL_COMMAND", "FOO_ASKPASS", "X_RSH"})
    CHECK_FALSE(alias_allowed(name));
  for (std::string_view name : {"GOAL", "HISTORY", "MODE", "TARGET", "COUNT", "GREETING", "COMMANDS", "EDITORS_NOTE"})
    CHECK(alias_allowed(name));
  const auto e = export_context(object(R"({"git_config_parameters": "'core.fsmonitor'='touch X'", "goal": "g"})"));
  const auto vars = by_name(e);
  CHECK_FALSE(vars.contains("GIT_CONFIG_PARAMETERS"));
  CHECK(vars.contains("RECIPE_VAR_git_config_parameters"));
  CHECK(vars.at("GOAL") == "g");
}

TEST_CASE("when keys map to one name the lexicographically first key wins") {
  const auto e = export_context(object(R"({
    "a_b": "under", "a-b": "dash", "x": "lower", "X": "upper", "obj": {"status": "nested"}, "obj.status": "dotted"
  })"));
  const auto vars = by_name(e);
  CHECK(vars.at("RECIPE_VAR_a_b") == "dash");  // '-' sorts before '_'
  CHECK(vars.at("A_B") == "dash");
  CHECK(vars.at("RECIPE_VAR_x") == "lower");
  CHECK(vars.at("RECIPE_VAR_X") == "upper");
  CHECK(vars.at("X") == "upper");               // "X" sorts before "x"
  CHECK(vars.at("RECIPE_VAR_obj__status") == "dotted");  // the top-level key "obj.status" before obj → status
  CHECK(e.variables.size() == vars.size());
}

TEST_CASE("context values over the per-value or total limit are marked to travel by file") {
  const std::string at_limit(96 * 1024, 'a');
  boost::json::object ctx;
  ctx["at"] = at_limit;
  ctx["over"] = at_limit + "b";
  const auto e = export_context(ctx);
  for (const auto& v : e.variables) {
    INFO(v.name);
    CHECK(v.by_file == (v.name == "RECIPE_VAR_over" || v.name == "OVER"));
  }
  const auto small = export_context(ctx, {.max_value_bytes = 10});
  for (const auto& v : small.variables) CHECK(v.by_file);

  boost::json::object many;
  for (int k = 0; k < 40; ++k) many["k" + std::to_string(100 + k)] = std::string(50'000, 'x');  // 80 variables
  const auto t = export_context(many);
  std::size_t total = 0, in_env = 0;
  for (const auto& v : t.variables)
    if (!v.by_file) {
      total += v.name.size() + v.value.size() + 2;
      ++in_env;
    }
  CHECK(total <= 1'500'000);
  CHECK(in_env == 29);  // the aliases K100.. come first: 29 * 50,006 bytes fit in 1.5 MB
  CHECK(t.variables.size() == 80);
}

TEST_CASE("the step plan keeps the script's variables and drops oversized context values with a warning") {
  boost::json::object ctx;
  ctx["x"] = "context";
  ctx["big"] = std::string(100 * 1024, 'b');
  ctx["small"] = "s";
  const std::vector<shell_variable> script = {{"RECIPE_VAR_x", "script"}, {"RECIPE_VAR_huge", std::string(200 * 1024, 'h')}};
  const auto plan = plan_shell_exports(ctx, script);
  REQUIRE(plan.variables.size() >= 2);
  CHECK(plan.variables[0] == exported_variable{"RECIPE_VAR_x", "script", false});
  CHECK(plan.variables[1].name == "RECIPE_VAR_huge");
  CHECK(plan.variables[1].by_file);
  const auto vars = by_name(plan);
  CHECK(vars.at("RECIPE_VAR_x") == "script");  // the script's own value, once
  CHECK(vars.at("X") == "context");
  CHECK(vars.at("SMALL") == "s");
  CHECK_FALSE(vars.contains("RECIPE_VAR_big"));
  CHECK_FALSE(vars.contains("BIG"));
  for (const auto& v : plan.variables)
    if (v.name != "RECIPE_VAR_huge") CHECK_FALSE(v.by_file);
  REQUIRE(plan.warnings.size() == 1);
  CHECK(plan.warnings[0] ==
        "context key 'big' (BIG, RECIPE_VAR_big) is larger than the 98304-byte limit of one value: not exported to "
        "the environment");

  const auto capped = plan_shell_exports(ctx, {{"RECIPE_VAR_big", std::string(100 * 1024, 'b')}}, {.max_value_bytes = 200 * 1024});
  CHECK_FALSE(capped.variables[0].by_file);  // max_env_value_bytes raises the cap
  // ... but never past what one environment string can hold (128 KiB with the name).
  const std::string near(128 * 1024 - 16, 'n');
  const auto raised = plan_shell_exports({}, {{"RECIPE_VAR_near", near}}, {.max_value_bytes = 1 << 20});
  CHECK(raised.variables[0].by_file);
  const auto fits = plan_shell_exports({}, {{"RECIPE_VAR_near", near.substr(1)}}, {.max_value_bytes = 1 << 20});
  CHECK_FALSE(fits.variables[0].by_file);
}

TEST_CASE("script variables past the total limit travel by file, context ones are left out") {
  boost::json::object ctx;
  ctx["later"] = "l";
  std::vector<shell_variable> script;
  for (int k = 0; k < 20; ++k) script.push_back({"RECIPE_VAR_v" + std::to_string(k), std::string(90 * 1024, 'v')});
  const auto plan = plan_shell_exports(ctx, script);
  std::size_t by_file = 0;
  for (std::size_t k = 0; k < script.size(); ++k) {
    CHECK(plan.variables[k].name == script[k].name);
    by_file += plan.variables[k].by_file ? 1 : 0;
  }
  CHECK(by_file == 4);  // 16 * 92,176 bytes fit in 1.5 MB
  CHECK(plan.variables.size() == 22);  // RECIPE_VAR_later and LATER still fit
  const auto tight = plan_shell_exports(ctx, script, {.max_total_bytes = 5});
  CHECK(tight.variables.size() == 20);
  for (const auto& v : tight.variables) CHECK(v.by_file);
  CHECK(has_warning(tight, "context key 'later' (LATER, RECIPE_VAR_later) would pass the 5-byte limit of all values"));
}

TEST_CASE("context values holding NUL are left out and warnings stay bounded") {
  boost::json::object ctx;
  ctx["nul"] = std::string("a\0b", 3);
  for (int k = 0; k < 30; ++k) ctx["big" + std::to_string(k)] = std::string(100, 'x');
  const auto plan = plan_shell_exports(ctx, {}, {.max_value_bytes = 10});
  CHECK(plan.variables.empty());
  CHECK(plan.warnings.size() == 21);
  CHECK(plan.warnings.back() == "11 more context keys not exported to the environment");
  const auto e = export_context(ctx);
  CHECK_FALSE(by_name(e).contains("RECIPE_VAR_nul"));
  CHECK(has_warning(e, "context key 'nul' (NUL, RECIPE_VAR_nul) holds a NUL byte"));
}

TEST_CASE("members of a top-level empty key have their own key paths, as any member") {
  // "" → RECIPE_VAR_ and its member a → RECIPE_VAR___a, which the key "__a" also gives:
  // the first key by bytes wins, "__a" ('_') before "a" ('a').
  const auto e = export_context(object(R"({"": {"a": "from-empty"}, "__a": "from-underscore"})"));
  CHECK(by_name(e).at("RECIPE_VAR___a") == "from-underscore");
}
