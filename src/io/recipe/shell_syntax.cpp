#include "recipe/shell_syntax.hpp"

#include "process/supervisor.hpp"
#include "executor/step_environment.hpp"
#include "files/temp_file.hpp"
#include "files/text_lines.hpp"

#include <arun/validation.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <map>
#include <memory>
#include <optional>
#include <regex>

namespace arun::io {
namespace {

namespace asio = boost::asio;

constexpr std::size_t checks_at_once = 8;
// Scripts checked by one bash: a bash start costs more than parsing a script, and a large
// recipe has thousands of them.
constexpr std::size_t scripts_per_batch = 64;

struct script_check {
  const step* s = nullptr;
  std::string script;
  std::string error;      // bash's first complaint, empty when the script parses
  std::size_t line = 0;   // 1-based line of the script bash names
};

// Whether `script` has a `{` or `}` standing as a word of its own (not `${x}`, not inside a
// word): what could open or close a function body.
bool has_brace_word(std::string_view script) {
  auto separator = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')'; };
  for (std::size_t i = 0; i < script.size(); ++i) {
    if (script[i] != '{' && script[i] != '}') continue;
    const bool before = i == 0 || separator(script[i - 1]);
    const bool after = i + 1 == script.size() || separator(script[i + 1]);
    if (before && after) return true;
  }
  return false;
}

// `bash -n` on `text`; nullopt when there is nothing to check with (no temporary file, no bash).
asio::awaitable<std::optional<process_result>> bash_n(const std::string& text, std::vector<std::string> env) {
  std::unique_ptr<private_temp_file> file;
  try {
    file = std::make_unique<private_temp_file>("arun-syntax-", text);
  } catch (const std::system_error&) {
    co_return std::nullopt;  // the run will tell
  }
  process_spec spec;
  // extglob as scripts that `shopt -s extglob` get it: -n never runs that shopt line, and
  // !(x) / +(a|b) would not parse without it.
  spec.launch.argv = {"/bin/bash", "-O", "extglob", "-n", file->path()};
  spec.launch.env = std::move(env);
  spec.timeout = std::chrono::seconds(10);
  auto r = co_await run_process(std::move(spec));
  if (!r.launched()) co_return std::nullopt;
  co_return r;
}

// Whether every script of `batch` parses, checked by one bash: each becomes the body of a
// function (after a `:`, so an empty one is a body too), which -n parses and never runs. Any
// complaint or warning sends the batch to one bash per script, for bash's exact words.
asio::awaitable<bool> batch_parses(const std::vector<script_check*>& batch, const std::vector<std::string>& env) {
  std::string text;
  for (std::size_t i = 0; i < batch.size(); ++i)
    text += "__arun_check_" + std::to_string(i) + "() {\n:\n" + batch[i]->script + "\n}\n";
  const auto r = co_await bash_n(text, env);
  co_return r && r->exit_code == 0 && r->err.text.empty();
}

asio::awaitable<void> check_one(script_check& c, std::vector<std::string> env) {
  const auto checked = co_await bash_n(c.script, std::move(env));
  if (!checked || checked->exit_code.value_or(0) == 0) co_return;
  const auto& r = *checked;
  static const std::regex complaint(": line ([0-9]+): (.*)");
  std::smatch m;
  const std::string& text = r.err.text;
  if (std::regex_search(text, m, complaint)) {
    c.line = static_cast<std::size_t>(std::stoul(m[1].str()));
    c.error = m[2].str();
  } else {
    c.error = text.substr(0, text.find('\n'));
  }
}

asio::awaitable<void> worker(const std::vector<std::vector<script_check*>>& batches, std::size_t& next,
                             const std::vector<std::string>& env) {
  while (next < batches.size()) {
    const auto& batch = batches[next++];
    if (batch.size() > 1 && co_await batch_parses(batch, env)) continue;
    for (auto* c : batch) co_await check_one(*c, env);
  }
}

}  // namespace

std::vector<diagnostic> check_shell_syntax(const std::vector<const recipe*>& recipes) {
  std::map<std::string, script_check> by_script;  // identical scripts (a foreach body) once
  std::vector<std::pair<const step*, std::string>> steps;
  for (const auto* r : recipes)
    for_each_step(*r, [&](const step& s, int) {
      if (s.type != step_type::bash || s.command.empty()) return;
      auto script = bash_script_preview(s.command);
      if (!script) return;
      by_script.try_emplace(*script, script_check{&s, *script});
      steps.emplace_back(&s, std::move(*script));
    });
  std::vector<std::vector<script_check*>> batches, alone;
  for (auto& [text, c] : by_script) {
    // A script with a brace word ({ … } groups, functions) could close one wrapper and open
    // another with a neighbour's brace, and one left inside a quote, `$(`, a heredoc or after a
    // trailing backslash would read on into its neighbour (two unbalanced quotes would pair
    // up and pass): such scripts get a bash of their own.
    if (has_brace_word(c.script) || !bash_script_closed(c.script)) {
      alone.push_back({&c});
      continue;
    }
    if (batches.empty() || batches.back().size() == scripts_per_batch) batches.emplace_back();
    batches.back().push_back(&c);
  }
  batches.insert(batches.end(), alone.begin(), alone.end());
  asio::io_context ctx;
  std::size_t next = 0;
  const auto env = current_environment();
  for (std::size_t w = 0; w < std::min(checks_at_once, batches.size()); ++w)
    asio::co_spawn(ctx, worker(batches, next, env), asio::detached);
  ctx.run();

  std::vector<diagnostic> out;
  for (const auto& [s, script] : steps) {
    const auto& c = by_script.at(script);
    if (c.error.empty()) continue;
    diagnostic d;
    d.where = s->at("command");
    d.key = "command";
    d.code = "shell-syntax";
    d.message = "bash refuses the command of step '" + s->id + "'" +
                (c.line ? " (line " + std::to_string(c.line) + " of the script)" : std::string()) + ": " + c.error;
    d.hint = "bash -n checks the script as it will run, each {{reference}} as its variable";
    // Point at the line bash names: its text, the n-th time it appears in the command.
    const auto line = c.line ? text_line(s->command, c.line) : std::string_view();
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos) {
      d.snippet = std::string(line.substr(first));
      std::size_t before = 0;
      for (std::size_t i = 1; i < c.line; ++i)
        if (text_line(s->command, i).find(d.snippet) != std::string_view::npos) ++before;
      d.occurrence = before;
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace arun::io
