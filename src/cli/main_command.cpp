// Command-line dispatch: `arun [run] RECIPE`, validate, explain, graph, list, agents list,
// resume, logs, approve, deny, sessions list|show|clean, config, init, completions, `--version`.
#include "command_line.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "agent_setup.hpp"
#include "usage_hints.hpp"
#include "user_config.hpp"

#include <cstdio>

namespace arun::cli {

int main(int argc, char** argv) {
  CLI::App app{"arun: an asynchronous recipe runner", "arun"};
  // Before any subcommand is added: they inherit it.
  app.failure_message(parse_failure_message);
  app.set_version_flag("--version", std::string("arun ") + ARUN_VERSION);
  app.require_subcommand(0, 1);
  // `arun RECIPE` is `arun run RECIPE`: the run options live on the top level too.
  run_settings settings;
  add_run_options(app, settings);
  auto* run = app.add_subcommand("run", "Run a recipe (the default command)");
  add_run_options(*run, settings);
  // --output-format of validate, explain, list and agents list (run has its own).
  std::string output_format = "text";
  auto add_output_format = [&](CLI::App* cmd, const char* what) {
    cmd->add_option("--output-format", output_format, std::string("text, or json: ") + what)
        ->check(CLI::IsMember({"text", "json"}))
        ->type_name("FORMAT")
        ->group("Output");
  };
  recipe_options validate_options;
  auto* validate = app.add_subcommand("validate", "Check a recipe: every diagnostic, exit 0 or 2");
  add_recipe_options(*validate, validate_options);
  add_agent_options(*validate, validate_options);
  agent_settings validate_agents;
  add_agent_cli_options(*validate, validate_agents);
  add_output_format(validate, "one document with every diagnostic (file, line, column, code, help)");
  recipe_options explain_options;
  auto* explain = app.add_subcommand("explain", "Print the plan of a recipe without running it");
  add_recipe_options(*explain, explain_options);
  add_output_format(explain, "the recipe, its steps and stages");
  recipe_options graph_options;
  std::string graph_format = "dot";
  auto* graph = app.add_subcommand("graph", "Print the recipe as a graph (DOT or Mermaid)");
  add_recipe_options(*graph, graph_options);
  graph->add_option("--format", graph_format, "dot or mermaid")->check(CLI::IsMember({"dot", "mermaid"}))->group("Output");
  bool graph_expand = false;
  graph->add_flag("--expand", graph_expand, "Draw each sub-recipe inside the step that calls it")->group("Output");
  recipe_options list_options;
  auto* list = app.add_subcommand("list", "List the recipes found by discovery");
  list->add_option("-R,--recipe-dir", list_options.recipe_dirs, "Directory searched first (repeatable)")
      ->allow_extra_args(false);
  list->add_option("-C,--working-dir", list_options.working_dir, "Directory discovery starts from");
  add_output_format(list, "every recipe with its path and whether it is valid");
  recipe_options agents_options;
  auto* agents = app.add_subcommand("agents", "Agent files: where agent steps find their personas");
  agents->require_subcommand(1, 1);
  auto* agents_list = agents->add_subcommand("list", "List the agents found in the agent search path");
  agents_list->add_option("--agent-dir", agents_options.agent_dirs, "Directory searched first (repeatable)")
      ->allow_extra_args(false);
  agents_list->add_option("-C,--working-dir", agents_options.working_dir, "Directory the project places are below");
  add_output_format(agents_list, "every agent file with its reference and source");
  resume_settings resume_options;
  auto* resume = app.add_subcommand("resume", "Continue a session: finished steps are not run again");
  add_resume_options(*resume, resume_options);
  logs_settings logs_options;
  auto* logs = app.add_subcommand("logs", "Print (or follow with -f) the output of a session's step instances");
  add_logs_options(*logs, logs_options);
  report_settings report_options;
  auto* report = app.add_subcommand(
      "report", "One self-contained HTML file (or JSON) showing a session: status, timeline, failures, usage");
  report->add_option("session", report_options.session_id, session_argument_help)->required();
  report->add_option("--session-dir", report_options.session_dir, "Where sessions live")->type_name("DIR");
  report->add_option("-o,--output", report_options.output,
                     "Where to write it: a file (default arun-report-ID.html for html, stdout for json), or - for "
                     "stdout")
      ->type_name("FILE");
  report->add_option("--output-format", report_options.output_format, "html (the page) or json (its data)")
      ->check(CLI::IsMember({"html", "json"}));
  sessions_settings sessions_options;
  decision_settings decision;
  auto* approve = app.add_subcommand("approve", "Approve gates a session waits at; then arun resume ID");
  auto* deny = app.add_subcommand("deny", "Deny gates a session waits at (final); then arun resume ID");
  for (auto* cmd : {approve, deny}) {
    cmd->add_option("session", sessions_options.session_id, session_argument_help)->required();
    cmd->add_option("--session-dir", sessions_options.session_dir, "Where sessions live")->type_name("DIR");
    cmd->add_option("--step", decision.gates,
                    "The waiting gate's instance id (a glob such as 'fan[*]/review' also works); repeatable. "
                    "Needed when several gates wait")
        ->type_name("INSTANCE");
    cmd->add_flag("--all", decision.all, "Every gate the session waits at");
  }
  approve->add_option("-m,--message", decision.message, "A message for the recipe: {{_approval_message}}");
  deny->add_option("-r,--reason", decision.message, "Why (shown in the step's error)");
  // `arun sessions` alone lists them: the listing's options are the command's own too.
  auto* sessions = app.add_subcommand("sessions", "Sessions: list (the default), show, clean");
  sessions->require_subcommand(0, 1);
  auto add_root = [&](CLI::App* cmd) {
    cmd->add_option("--session-dir", sessions_options.session_dir, "Where sessions live")->type_name("DIR");
  };
  add_root(sessions);
  sessions->add_option("--output-format", sessions_options.output_format, "text or json (as sessions list)")
      ->check(CLI::IsMember({"text", "json"}));
  auto* sessions_list = sessions->add_subcommand("list", "Sessions, newest first: status, recipe, progress");
  add_root(sessions_list);
  sessions_list->add_option("--output-format", sessions_options.output_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  auto* sessions_show = sessions->add_subcommand("show", "One session's state and its last events");
  add_root(sessions_show);
  sessions_show->add_option("session", sessions_options.session_id, session_argument_help)->required();
  sessions_show->add_option("--output-format", sessions_options.output_format, "text or json (the state.json object)")
      ->check(CLI::IsMember({"text", "json"}));
  auto* sessions_clean = sessions->add_subcommand(
      "clean", "Remove one session, or those unchanged for DAYS (never one held by a running arun, nor, by age, "
               "one waiting for approval)");
  add_root(sessions_clean);
  sessions_clean->add_option("session", sessions_options.session_id,
                             "The session to remove whatever its age or state, unless a running arun holds it: its id, "
                             "last, or a unique prefix or suffix of its id");
  sessions_clean->add_option("--older-than", sessions_options.older_than_days,
                             "Age in days: the sessions unchanged for longer go (instead of a session)")
      ->check(quiet(CLI::Range(0.0, 100000.0)));
  sessions_clean->add_flag("--dry-run", sessions_options.dry_run, "Only say which sessions would be removed");
  cache_settings cache_options;
  auto* cache = app.add_subcommand("cache", "The cache of step outputs (steps with cache:): list, clear");
  cache->require_subcommand(1, 1);
  auto* cache_list_cmd = cache->add_subcommand("list", "Cached outputs, most recently used first: age, size, recipe, instance");
  auto* cache_clear_cmd = cache->add_subcommand("clear", "Remove cached outputs: all, or those the options pick");
  for (auto* cmd : {cache_list_cmd, cache_clear_cmd}) {
    cmd->add_option("--cache-dir", cache_options.cache_dir,
                    "Where cached outputs live (default $ARUN_CACHE_DIR, else $XDG_CACHE_HOME/arun, else ~/.cache/arun)")
        ->type_name("DIR");
    cmd->add_option("--step", cache_options.steps,
                    "Only outputs stored by these instances: an instance id or glob ('fan[*]', 'triage*'); repeatable")
        ->allow_extra_args(false)
        ->type_name("INSTANCE");
    cmd->add_option("--recipe", cache_options.recipe, "Only outputs stored by runs of this recipe (its name)")
        ->type_name("NAME");
  }
  cache_list_cmd->add_option("--output-format", cache_options.output_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cache_clear_cmd->add_option("--older-than", cache_options.older_than,
                              "Only outputs unused for this long: seconds, or 90s, 15m, 1h30m, 7d, 2w")
      ->type_name("AGE");
  cache_clear_cmd->add_flag("--dry-run", cache_options.dry_run, "Only say how many outputs would be removed");
  init_settings init_options;
  auto* init = app.add_subcommand("init", "Write a commented starter recipe, NAME.yaml (default recipe.yaml)");
  init->add_option("name", init_options.name, "The recipe's name or file (NAME.yaml)");
  init->add_flag("--force", init_options.force, "Overwrite the file if it exists");
  std::string completion_shell;
  auto* completions = app.add_subcommand("completions", "Print the shell completion script for bash, zsh or fish");
  completions->add_option("shell", completion_shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  std::string config_format = "text";
  auto* config_cmd = app.add_subcommand(
      "config", "Show the effective defaults, where each comes from, and whether ./.arun.yaml is trusted: trust, untrust");
  config_cmd->add_option("--output-format", config_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  std::string trust_file;
  auto* config_trust = config_cmd->add_subcommand(
      "trust", "Trust a project's config file as it is now (its content's SHA-256): all its keys apply");
  auto* config_untrust = config_cmd->add_subcommand("untrust", "Forget the trust of a project's config file");
  for (auto* cmd : {config_trust, config_untrust})
    cmd->add_option("file", trust_file, "The project's config file (default ./.arun.yaml)")->type_name("FILE");
  app.footer("Session ids: the full id, last (or -) for the newest, or a unique prefix or suffix of one.\n"
             "A command's options: arun help COMMAND (or arun COMMAND --help).");
  // What the completion scripts ask on TAB: answered from the model above, before anything
  // that could print (config warnings) or fail.
  if (argc > 1 && std::string_view(argv[1]) == "__complete")
    return complete_command(app, std::vector<std::string>(argv + 2, argv + argc));
  std::vector<char*> args(argv, argv + argc);
  if (const auto unknown = help_command_as_flag(args, app); !unknown.empty()) {
    std::fprintf(stderr, "arun: %s\n", unknown.c_str());
    return exit_usage;
  }
  argc = static_cast<int>(args.size());
  argv = args.data();
  // Defaults from the config files and ARUN_* (user_config.hpp); options given win over them.
  const auto config = load_user_config();
  const bool showing_config = argc > 1 && std::string_view(argv[1]) == "config";
  // Help, the version and the completion scripts read no setting: a broken config file must
  // not keep them (nor the man pages and completions made from them at build time) from working.
  bool informational = argc > 1 && std::string_view(argv[1]) == "completions";
  for (int i = 1; i < argc; ++i)
    for (const std::string_view flag : {"-h", "--help", "--version"}) informational = informational || argv[i] == flag;
  if (!showing_config && !informational) {
    for (const auto& w : config.warnings) std::fprintf(stderr, "%s\n", w.c_str());
    if (!config.errors.empty()) {
      for (const auto& e : config.errors) std::fprintf(stderr, "%s\n", e.c_str());
      return exit_usage;
    }
  }
  if (config.errors.empty()) {
    for (auto* run_like : {&settings, &resume_options.run}) {
      run_like->max_concurrent = config.integer("max_concurrent");
      run_like->recipe.color = config.value("color");
      run_like->retention_days = config.integer("retention_days");
      run_like->retention_sessions = config.integer("retention_sessions");
      if (!config.from_default("log_level")) run_like->log_level = config.value("log_level");
    }
    validate_options.color = config.value("color");
    // A config file's agent CLI (the environment's is read where it is used); a resume keeps
    // the session's own.
    if (!config.from_default("agent_cli") && !config.entries.at("agent_cli").source.starts_with("$"))
      settings.agents.cli = validate_agents.cli = config.value("agent_cli");
    if (!config.from_default("session_dir"))
      for (auto* dir : {&settings.session_dir, &resume_options.run.session_dir, &sessions_options.session_dir,
                        &logs_options.session_dir, &report_options.session_dir})
        *dir = config.value("session_dir");
  }
  if (const auto typo = mistyped_subcommand(argc, argv, app); !typo.empty()) {
    std::fprintf(stderr, "arun: %s\n", typo.c_str());
    return exit_usage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0)
      if (const auto typo = mistyped_option(argc, argv, app); !typo.empty()) {
        std::fprintf(stderr, "arun: %s\n", typo.c_str());
        return exit_usage;
      }
    const int code = app.exit(e);
    return code == 0 ? exit_success : exit_usage;
  }
  settings.command_line = resume_options.run.command_line = std::vector<std::string>(argv, argv + argc);
  if (validate->parsed()) return validate_command(validate_options, output_format, validate_agents);
  if (explain->parsed()) return explain_command(explain_options, output_format);
  if (graph->parsed()) return graph_command(graph_options, graph_format, graph_expand);
  if (list->parsed()) return list_command(list_options, output_format);
  if (agents_list->parsed()) return agents_list_command(agents_options, output_format);
  if (resume->parsed()) {
    // What the resume's command line says wins over what the run was started with.
    for (const auto* option : resume->get_options())
      if (option->count() > 0)
        for (const auto& name : option->get_lnames()) resume_options.given.insert(name);
    return resume_command(resume_options);
  }
  if (logs->parsed()) return logs_command(logs_options);
  if (report->parsed()) return report_command(report_options);
  decision.approve = approve->parsed();
  if (approve->parsed() || deny->parsed()) return decide_command(sessions_options, decision);
  if (sessions_show->parsed()) return sessions_show_command(sessions_options);
  if (sessions_clean->parsed()) {
    if (sessions_options.session_id.empty() == (sessions_options.older_than_days < 0)) {
      std::fprintf(stderr, "arun: sessions clean takes a session (arun sessions clean ID) or --older-than DAYS%s\n",
                   sessions_options.session_id.empty() ? "" : ", not both");
      return exit_usage;
    }
    return sessions_clean_command(sessions_options);
  }
  if (sessions->parsed()) return sessions_list_command(sessions_options);
  if (cache_list_cmd->parsed()) return cache_list(cache_options);
  if (cache_clear_cmd->parsed()) return cache_clear(cache_options);
  if (config_trust->parsed() || config_untrust->parsed())
    return config_trust_command(trust_file, config_trust->parsed());
  if (config_cmd->parsed()) return config_command(config_format);
  if (init->parsed()) return init_command(init_options);
  if (completions->parsed()) return completions_command(app, completion_shell);
  return run_command(settings);
}

}  // namespace arun::cli
