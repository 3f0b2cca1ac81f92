#include "usage_hints.hpp"

#include "recipe/discovery.hpp"

#include <arun/diagnostics.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string_view>
#include <vector>

namespace arun::cli {
namespace {

// The value of -R/--recipe-dir and -C/--working-dir in argv, for discovery before parsing.
std::vector<std::string> values_of(int argc, char** argv, std::string_view short_name, std::string_view long_name) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == short_name || a == long_name) && i + 1 < argc) values.emplace_back(argv[++i]);
    else if (a.starts_with(std::string(long_name) + "=")) values.emplace_back(a.substr(long_name.size() + 1));
    else if (a.size() > short_name.size() && a.starts_with(short_name)) values.emplace_back(a.substr(short_name.size()));  // -Rdir
  }
  return values;
}

// The subcommand argv names (nested: `sessions list`), or the top-level app.
const CLI::App* chosen(int argc, char** argv, const CLI::App& app) {
  const CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("-")) continue;
    bool descended = false;
    for (const auto* sub : at->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == a) {
        at = sub;
        descended = true;
        break;
      }
    if (!descended && at != &app) break;
  }
  return at;
}

}  // namespace

std::string mistyped_subcommand(int argc, char** argv, const CLI::App& app) {
  if (argc < 2) return {};
  const std::string word = argv[1];
  if (word.empty() || word.starts_with("-") || io::looks_like_path(word)) return {};
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  std::vector<std::string_view> views(names.begin(), names.end());
  for (auto n : views)
    if (n == word) return {};
  const auto hint = did_you_mean(word, views);
  if (hint.empty()) return {};
  // A recipe of that name runs, as `arun NAME` always does.
  const auto dirs = values_of(argc, argv, "-C", "--working-dir");
  const auto discovery = io::command_line_discovery(values_of(argc, argv, "-R", "--recipe-dir"), dirs.empty() ? "" : dirs.back());
  if (!io::find_recipe(word, discovery).path.empty()) return {};
  return "unknown command '" + word + "' (" + hint + " To run a recipe named " + word + ": arun run " + word + ")";
}

std::string mistyped_option(int argc, char** argv, const CLI::App& app) {
  const auto* at = chosen(argc, argv, app);
  std::vector<std::string> names;
  for (const auto* opt : at->get_options([](const CLI::Option*) { return true; })) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  std::vector<std::string_view> views(names.begin(), names.end());
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") break;
    if (!a.starts_with("--")) continue;
    a = a.substr(0, a.find('='));
    bool known = false;
    for (auto n : views) known = known || n == a;
    if (known) continue;
    const auto hint = did_you_mean(a, views);
    const std::string where = at == &app ? std::string("arun") : "arun " + at->get_name();
    return "unknown option '" + std::string(a) + "'" + (hint.empty() ? " (" + where + " --help lists them)" : " (" + hint + ")");
  }
  return {};
}

std::string help_command_as_flag(std::vector<char*>& args, const CLI::App& app) {
  static char help_flag[] = "--help";
  if (args.size() < 2 || std::string_view(args[1]) != "help") return {};
  const CLI::App* at = &app;
  std::string path = "arun";
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string_view word = args[i];
    if (word.starts_with("-")) continue;
    const auto subs = at->get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
    const auto sub = std::find_if(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->get_name() == word; });
    if (sub == subs.end())
      return "help: " + path + " has no command '" + std::string(word) + "' (" + path + " --help lists them)";
    at = *sub;
    path += " " + at->get_name();
  }
  args.erase(args.begin() + 1);
  args.push_back(help_flag);
  return {};
}

std::string parse_failure_message(const CLI::App* app, const CLI::Error& e) {
  std::string path = "arun";
  for (auto parsed = app->get_subcommands(); !parsed.empty(); parsed = parsed.front()->get_subcommands())
    path += " " + parsed.front()->get_name();
  return "arun: " + std::string(e.what()) + " (" + path + " --help lists the options)\n";
}

}  // namespace arun::cli
