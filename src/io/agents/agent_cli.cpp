#include "agents/agent_cli.hpp"

#include <fnmatch.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace arun::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view placeholders[] = {"{prompt_file}", "{system_prompt_file}", "{model}", "{working_dir}"};

std::string_view name_of(agent_cli_kind k) {
  switch (k) {
    case agent_cli_kind::claude: return "claude";
    case agent_cli_kind::copilot: return "copilot";
    case agent_cli_kind::codex: return "codex";
    case agent_cli_kind::amplihack: return "amplihack";
    case agent_cli_kind::fake: return "fake";
    case agent_cli_kind::custom: return "custom";
  }
  return "claude";
}

// The CLI whose arguments are used: amplihack passes its inner CLI's arguments through.
agent_cli_kind shape_of(const agent_cli& cli) { return cli.kind == agent_cli_kind::amplihack ? cli.inner : cli.kind; }

bool names_placeholder(const std::vector<std::string>& words, std::string_view placeholder) {
  for (const auto& w : words)
    if (w.find(placeholder) != std::string::npos) return true;
  return false;
}

void replace_all(std::string& text, std::string_view what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
}

// The arguments of a preset after the program name.
std::vector<std::string> preset_arguments(const agent_cli& cli, const agent_payload& payload,
                                          const agent_request& request, const std::string& prompt_file) {
  const auto shape = shape_of(cli);
  std::vector<std::string> args;
  auto add_model = [&] {
    if (!request.model.empty()) args.insert(args.end(), {"--model", request.model});
  };
  switch (shape) {
    case agent_cli_kind::copilot:
      args.push_back("-p");
      args.push_back(payload.prompt_by_file ? prompt_pointer(prompt_file) : payload.prompt);
      if (cli.allow_all_tools) args.push_back("--allow-all-tools");
      add_model();
      break;
    case agent_cli_kind::codex:
      args.insert(args.end(), {"exec", "--json"});
      add_model();
      args.push_back("-");
      break;
    default:  // claude, and the fake agent, which takes claude's shape
      args.insert(args.end(), {"-p", "--output-format", "json", "--add-dir", request.working_dir});
      add_model();
      if (!payload.system_prompt.empty()) args.insert(args.end(), {"--append-system-prompt", payload.system_prompt});
      break;
  }
  return args;
}

std::vector<std::string> template_arguments(const std::vector<std::string>& words, const agent_request& request,
                                            const std::string& prompt_file, const std::string& system_prompt_file) {
  std::vector<std::string> argv;
  bool last_is_option = false;  // the previous word is a plain `-x`/`--x` (no placeholder)
  for (const auto& word : words) {
    if (request.model.empty() && word.find("{model}") != std::string::npos) {
      // No model: leave out the word, and the option word just before a lone {model}.
      if (word == "{model}" && last_is_option && argv.size() > 1) argv.pop_back();
      last_is_option = false;
      continue;
    }
    last_is_option = word.starts_with("-") && word.find('{') == std::string::npos;
    std::string w = word;
    replace_all(w, "{prompt_file}", prompt_file);
    replace_all(w, "{system_prompt_file}", system_prompt_file);
    replace_all(w, "{model}", request.model);
    replace_all(w, "{working_dir}", request.working_dir);
    argv.push_back(std::move(w));
  }
  return argv;
}

}  // namespace

std::variant<agent_cli, std::string> parse_agent_cli(std::string_view name, const std::string& fake_program) {
  agent_cli cli;
  if (name == "claude" || name == "copilot" || name == "codex") {
    cli.kind = name == "claude" ? agent_cli_kind::claude : name == "copilot" ? agent_cli_kind::copilot : agent_cli_kind::codex;
    cli.program = std::string(name);
    return cli;
  }
  if (name == "fake") {
    cli.kind = agent_cli_kind::fake;
    cli.program = fake_program;
    return cli;
  }
  if (name == "amplihack" || name.starts_with("amplihack:")) {
    const auto inner = name == "amplihack" ? std::string_view("claude") : name.substr(10);
    cli.kind = agent_cli_kind::amplihack;
    cli.program = "amplihack";
    if (inner == "claude") cli.inner = agent_cli_kind::claude;
    else if (inner == "copilot") cli.inner = agent_cli_kind::copilot;
    else if (inner == "codex") cli.inner = agent_cli_kind::codex;
    else return "unknown CLI '" + std::string(inner) + "' for amplihack: use amplihack:claude, amplihack:copilot or amplihack:codex";
    return cli;
  }
  return "unknown agent CLI '" + std::string(name) +
         "': use claude, copilot, codex, amplihack[:claude|copilot|codex] or fake, or --agent-command TEMPLATE";
}

std::variant<agent_cli, std::string> parse_agent_command(std::string_view text) {
  agent_cli cli;
  cli.kind = agent_cli_kind::custom;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) cli.command_template.push_back(std::move(word));
    word.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') flush();
    else word.push_back(c);
  }
  flush();
  if (cli.command_template.empty()) return std::string("--agent-command is empty: give the program and its arguments");
  for (const auto& w : cli.command_template) {
    for (auto open = w.find('{'); open != std::string::npos; open = w.find('{', open + 1)) {
      const auto close = w.find('}', open);
      const auto candidate = std::string_view(w).substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
      bool known = false;
      for (auto p : placeholders) known = known || candidate == p;
      if (!known)
        return "unknown placeholder '" + std::string(candidate) + "' in --agent-command (known: {prompt_file}, "
               "{system_prompt_file}, {model}, {working_dir})";
    }
  }
  cli.program = cli.command_template.front();
  return cli;
}

std::string describe(const agent_cli& cli) {
  if (cli.kind == agent_cli_kind::custom) return "--agent-command '" + cli.program + " ...'";
  if (cli.kind == agent_cli_kind::amplihack) return "amplihack:" + std::string(name_of(cli.inner));
  return std::string(name_of(cli.kind));
}

std::string provider_name(const agent_cli& cli) {
  if (cli.kind == agent_cli_kind::custom) {
    const std::string_view program = cli.program;
    return std::string(program.substr(program.rfind('/') + 1));
  }
  return std::string(name_of(cli.kind == agent_cli_kind::amplihack ? cli.inner : cli.kind));
}

reply_format reply_format_of(const agent_cli& cli) {
  switch (shape_of(cli)) {
    case agent_cli_kind::claude:
    case agent_cli_kind::fake: return reply_format::claude_json;
    case agent_cli_kind::codex: return reply_format::codex_jsonl;
    default: return reply_format::text;
  }
}

std::string with_instructions(const std::string& persona, const std::string& prompt) {
  if (persona.empty()) return prompt;
  std::string text;
  text.reserve(persona.size() + prompt.size() + 32);
  text.append("# Instructions\n\n").append(persona);
  if (!persona.ends_with('\n')) text.push_back('\n');
  text.append("\n# Task\n\n").append(prompt);
  return text;
}

std::string prompt_pointer(const std::string& prompt_file) {
  return "Read the file " + prompt_file +
         " first: it holds your complete instructions and task. Then carry them out.";
}

agent_payload compose_payload(const agent_cli& cli, const agent_request& given, const secret_check& holds_secret) {
  agent_payload p;
  const auto shape = shape_of(cli);
  agent_request request = given;
  if (!cli.system_prompt_suffix.empty()) {
    auto& sys = request.system_prompt;
    while (!sys.empty() && (sys.back() == '\n' || sys.back() == ' ')) sys.pop_back();
    sys = sys.empty() ? cli.system_prompt_suffix : sys + "\n\n" + cli.system_prompt_suffix;  // one blank line
  }
  if (cli.kind == agent_cli_kind::custom) {
    p.needs_system_prompt_file = names_placeholder(cli.command_template, "{system_prompt_file}");
    if (p.needs_system_prompt_file) {
      p.system_prompt = request.system_prompt;
      p.prompt = request.prompt;
    } else {
      p.prompt = with_instructions(request.system_prompt, request.prompt);
    }
    return p;
  }
  const bool secret_persona = holds_secret && holds_secret(request.system_prompt);
  if ((shape == agent_cli_kind::claude || shape == agent_cli_kind::fake) &&
      request.system_prompt.size() <= max_system_prompt_arg_bytes && !secret_persona) {
    p.system_prompt = request.system_prompt;
    p.prompt = request.prompt;
  } else {
    p.prompt = with_instructions(request.system_prompt, request.prompt);
  }
  p.prompt_on_stdin = shape != agent_cli_kind::copilot;
  // copilot reads its prompt only from argv (no stdin or file option): a secret must not go there.
  p.prompt_by_file = shape == agent_cli_kind::copilot &&
                     (p.prompt.size() > max_prompt_arg_bytes || (holds_secret && holds_secret(p.prompt)));
  return p;
}

std::vector<std::string> agent_argv(const agent_cli& cli, const agent_payload& payload, const agent_request& request,
                                    const std::string& prompt_file, const std::string& system_prompt_file) {
  if (cli.kind == agent_cli_kind::custom)
    return template_arguments(cli.command_template, request, prompt_file, system_prompt_file);
  std::vector<std::string> argv = {cli.program};
  if (cli.kind == agent_cli_kind::amplihack) argv.insert(argv.end(), {std::string(name_of(cli.inner)), "--"});
  auto args = preset_arguments(cli, payload, request, prompt_file);
  argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return argv;
}

bool serves_provider(const agent_cli& cli, std::string_view provider) {
  std::string p(provider);
  for (auto& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  switch (shape_of(cli)) {
    case agent_cli_kind::claude: return p == "anthropic";
    case agent_cli_kind::codex: return p == "openai";
    case agent_cli_kind::copilot: return p == "anthropic" || p == "openai" || p == "github";
    default: return true;
  }
}

model_choice choose_model(const agent_cli& cli, const std::string& step_model, const std::string& provider,
                          const boost::json::value& preferences, const std::string& agent_model) {
  model_choice out;
  if (!provider.empty() && !serves_provider(cli, provider))
    out.warnings.push_back("provider '" + provider + "' is not one " + describe(cli) + " serves; it runs with " +
                           describe(cli) + "'s models");
  if (!step_model.empty()) {
    out.model = step_model;
    return out;
  }
  if (const auto* list = preferences.if_array()) {
    for (const auto& entry : *list) {
      const auto* e = entry.if_object();
      if (!e) continue;
      const auto* p = e->if_contains("provider");
      const auto* m = e->if_contains("model");
      if (p && p->is_string() && !serves_provider(cli, p->get_string())) continue;
      if (!m || !m->is_string() || m->get_string().empty()) continue;
      const std::string model(m->get_string());
      if (model.find_first_of("*?[") == std::string::npos) {
        out.model = model;
        return out;
      }
      if (!agent_model.empty() && ::fnmatch(model.c_str(), agent_model.c_str(), 0) == 0) {
        out.model = agent_model;
        return out;
      }
      out.warnings.push_back("provider_preferences model '" + model + "' is a pattern and the agent file names no model "
                             "matching it; " + describe(cli) + " uses its default model");
      return out;
    }
  }
  out.model = agent_model;
  return out;
}

}  // namespace arun::io
