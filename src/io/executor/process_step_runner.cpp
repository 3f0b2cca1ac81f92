#include "executor/process_step_runner.hpp"

#include "output/secret_masker.hpp"

#include "agents/agent_reply.hpp"
#include "process/supervisor.hpp"
#include "executor/shell_exports.hpp"
#include "executor/step_environment.hpp"
#include "files/temp_file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <iterator>
#include <random>
#include <memory>
#include <optional>
#include <string.h>
#include <system_error>

namespace arun::io {
namespace {

// The fields of `r` a machine without a scheduler cannot honour, as "mem, partition".
std::string ignored_on_this_machine(const job_resources& r) {
  std::vector<std::string_view> names;
  if (!r.memory.empty()) names.push_back("mem");
  if (r.time) names.push_back("time");
  if (!r.partition.empty()) names.push_back("partition");
  if (!r.gpus.empty()) names.push_back("gpus");
  if (!r.licenses.empty()) names.push_back("licenses");
  if (!r.extra.empty()) names.push_back("extra");
  std::string list;
  for (auto n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  if (names.size() > 1) list = "{" + list + "}";
  return list;
}

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return fmt::format("SIG{}", abbrev);
  return fmt::format("signal {}", sig);
}

std::string resolve_dir(const std::string& base, const std::string& dir) {
  if (dir.empty()) return base;
  if (dir.front() == '/' || base.empty()) return dir;
  return base + "/" + dir;
}

std::string failure_snippet(const captured_output& err, const captured_output& out) {
  if (out.tail.empty()) return err.tail;
  if (err.tail.empty()) return out.tail;
  return fmt::format("{}\n--- stdout ---\n{}", err.tail, out.tail);
}

std::string describe_failure(const process_result& r, const std::optional<std::chrono::nanoseconds>& timeout) {
  if (r.cancelled) return "cancelled";
  if (r.timed_out) {
    const double seconds = std::chrono::duration<double>(timeout.value_or(r.duration)).count();
    return fmt::format("timed out after {:g}s{}", seconds,
                       r.signal ? " (stopped with " + signal_name(*r.signal) + ")" : "");
  }
  if (r.signal) return fmt::format("killed by {}", signal_name(*r.signal));
  if (r.exit_code) {
    if (auto tool = missing_tool(*r.exit_code, r.err.tail); !tool.empty())
      return fmt::format("'{}' is not installed or not on PATH", tool);
    return fmt::format("exit code {}", *r.exit_code);
  }
  return "ended without an exit status";
}

leaf_outcome to_leaf_outcome(process_result&& r, const std::optional<std::chrono::nanoseconds>& timeout) {
  leaf_outcome o;
  // A cluster's job: the step's duration is its run, the wait in the queue said apart.
  o.queued = r.queued;
  o.duration = r.duration - std::min(r.duration, r.queued.value_or(std::chrono::nanoseconds::zero()));
  if (!r.launched()) {
    o.error = r.launch_error;
    o.cancelled = r.cancelled;  // withdrawn before a cluster queued it
    return o;
  }
  o.started = true;
  o.exit_code = r.exit_code;
  o.signal = r.signal;
  o.timed_out = r.timed_out;
  o.cancelled = r.cancelled;
  o.truncated = r.out.truncated || r.err.truncated;
  o.stdout_text = std::move(r.out.text);
  if (!r.succeeded()) {
    o.error = describe_failure(r, timeout);
    o.snippet = failure_snippet(r.err, r.out);
  }
  return o;
}

std::function<void(stream_id, std::string_view, bool)> forward_lines(const output_line_handler& on_line) {
  if (!on_line) return {};
  return [&on_line](stream_id s, std::string_view line, bool cut) {
    on_line(s == stream_id::out ? output_stream::out : output_stream::err, line, cut);
  };
}

// An agent CLI's output lines as a reader should see them: its stderr as it is, its JSON
// stdout through `filter` (agent_reply.hpp).
std::function<void(stream_id, std::string_view, bool)> filtered_lines(const output_line_handler& on_line,
                                                                      reply_line_filter& filter) {
  if (!on_line) return {};
  return [&on_line, &filter](stream_id s, std::string_view line, bool cut) {
    if (s == stream_id::err) return on_line(output_stream::err, line, cut);
    for (const auto& shown : filter.on_stdout_line(line, cut)) on_line(shown.stream, shown.text, shown.cut);
  };
}

// The last lines of `text` within the snippet bounds, as the capture keeps its tail.
std::string tail_of(std::string_view text, const capture_limits& limits) {
  auto tail = last_lines(text, limits.tail_lines);
  if (tail.size() > limits.tail_bytes) {
    // Off a secret straddling the start: the rest of it would not be recognised (docs/watching.md#secrets).
    const auto start = text.size() - limits.tail_bytes;
    tail = text.substr(limits.secrets ? limits.secrets->safe_start(text, start) : start);
  }
  return std::string(tail);
}

// What an agent call reported and the step should know.
struct agent_report {
  std::optional<agent_usage> usage;
  bool failed = false;  ///< the CLI reported a failure
  bool rate_limited = false;
  std::string error, warning;
};

// Decodes the reply of a CLI speaking `format` from `r`'s stdout, in place: the reply text
// becomes the stdout (and its tail the snippet's stdout part). What the filter held back is
// shown now.
agent_report take_reply(process_result& r, reply_format format, const reply_context& context,
                        const capture_limits& limits, const reply_line_filter& filter,
                        const output_line_handler& on_line) {
  agent_report report;
  auto reply = decode_reply(format, r.out.text, context);
  // A call that ended on its own without anything to read says why elsewhere (its exit).
  const bool ended = r.exit_code && !r.timed_out && !r.cancelled;
  const bool blank = r.out.text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (!reply.warning.empty() && ended && (*r.exit_code == 0 || !blank)) report.warning = std::move(reply.warning);
  if (!reply.raw) {
    r.out.text = std::move(reply.text);
    r.out.tail = tail_of(r.out.text, limits);
  }
  if (on_line && filter.show_reply_at_end()) {
    for (const auto line : split_lines(r.out.text)) {
      const bool cut = line.size() > limits.max_line_bytes;
      on_line(output_stream::out, cut ? cut_text(line, limits.max_line_bytes, limits.secrets) : line, cut);
    }
  }
  report.usage = std::move(reply.usage);
  report.failed = reply.failed;
  report.rate_limited = reply.rate_limited;
  report.error = std::move(reply.error);
  return report;
}

// The outcome of an agent call whose reply `take_reply` decoded: what the CLI reported is
// added to what its process did.
leaf_outcome agent_outcome(process_result&& r, const std::optional<std::chrono::nanoseconds>& timeout,
                           agent_report&& report, std::vector<std::string>&& warnings, const agent_cli& cli,
                           const price_table* prices) {
  std::string err_tail = r.err.tail;
  auto o = to_leaf_outcome(std::move(r), timeout);
  o.warnings = std::move(warnings);
  if (!report.warning.empty()) o.warnings.push_back(std::move(report.warning));
  if (report.usage) {
    report.usage->provider = provider_name(cli);
    if (prices) apply_prices(*prices, *report.usage);
    o.usage = std::move(report.usage);
  }
  if (report.failed && o.succeeded()) {
    // Exit 0 but a failure reported (claude's is_error, codex's turn.failed): failed like a
    // non-zero exit, with the CLI's own words.
    o.reported_error = true;
    o.error = describe(cli) + " reported an error: " + report.error;
    o.snippet = std::move(err_tail);
  }
  const bool ended = o.exit_code && !o.timed_out && !o.cancelled;
  if (!o.reported_error && ended && !o.succeeded() && !report.error.empty() &&
      err_tail.find(report.error) == std::string::npos && o.stdout_text.find(report.error) == std::string::npos)
    o.error += " (" + describe(cli) + " reported: " + report.error + ")";  // said only in its JSON
  o.rate_limited = report.rate_limited && !o.succeeded();
  return o;
}

std::string random_tree_id() {
  std::random_device rd;
  return fmt::format("arun-{:08x}{:08x}", rd(), rd());
}

}  // namespace

process_step_runner::process_step_runner(runner_options options)
    : options_(std::move(options)),
      executor_(options_.jobs ? *options_.jobs : static_cast<executor&>(local_)),
      environment_(options_.inherited_env) {
  const auto depth = env_value(options_.inherited_env, "AMPLIHACK_SESSION_DEPTH");
  if (depth) {
    try {
      session_depth_ = std::max(0, std::stoi(*depth));
    } catch (const std::exception&) {
      session_depth_ = 0;  // not a number: start counting here
    }
  }
  tree_id_ = env_value(options_.inherited_env, "AMPLIHACK_TREE_ID").value_or(random_tree_id());
  value_files_.set_directory(options_.temp_dir);
}

boost::asio::awaitable<process_result> process_step_runner::run_job(process_spec spec, leaf_placement placement,
                                                                    std::vector<std::string>& warnings,
                                                                    running_handler on_running, std::string provider) {
  executor& where = placement.local_only ? local_ : executor_;
  // An `executor: local` step in a cluster run asked to stay here: what it inherits for the
  // cluster's steps is no news to it.
  const bool kept_here_by_choice = &where != &executor_;
  if (placement.resources && !where.caps().resources && !kept_here_by_choice)
    if (auto ignored = ignored_on_this_machine(*placement.resources); !ignored.empty())
      warnings.push_back("resources." + ignored + " not applied: the step runs on arun's machine, which "
                         "honours only cpus (as slots of --max-concurrent)");
  job_spec job;
  job.key = spec.label;
  job.process = std::move(spec);
  job.resources = std::move(placement.resources);
  job.provider = std::move(provider);
  if (&where == &executor_) job.fan_out = std::move(placement.fan_out);
  job.running = std::move(on_running);
  co_return co_await where.run(std::move(job));
}

bool process_step_runner::takes_fan_outs(const leaf_placement& p) const {
  return !p.local_only && executor_.caps().fan_outs;
}

boost::asio::awaitable<leaf_outcome> process_step_runner::run_bash(bash_invocation inv) {
  process_spec spec;
  // Temp files (large variables, large bodies) live until the child has exited.
  std::optional<shell_exports> exports;
  std::unique_ptr<private_temp_file> body_file;
  std::string body;
  try {
    std::vector<shell_export> variables;
    for (auto& v : inv.exports) variables.push_back({std::move(v.name), std::move(v.value), v.by_file});
    exports.emplace(std::move(variables), "arun-var-", &value_files_);
    body = exports->wrap(inv.command);
    if (body.size() > max_inline_body_bytes) {
      // One argv string is limited to 128 KiB (MAX_ARG_STRLEN): large bodies go by file.
      body_file = std::make_unique<private_temp_file>("arun-body-", body, options_.temp_dir);
    }
  } catch (const std::system_error& e) {
    leaf_outcome o;
    o.error = std::string("cannot write the step body or a variable to a temporary file: ") + e.what();
    co_return o;
  }
  if (body_file)
    spec.launch.argv = {"/bin/bash", body_file->path()};
  else
    spec.launch.argv = {"/bin/bash", "-c", std::move(body)};
  // The order of docs/reference/recipe.md, "The environment of a step": inherited, hardening, the
  // context export, then the step's own env.
  env_overrides overrides = exports->take_environment();
  overrides.insert(overrides.end(), std::make_move_iterator(inv.env.begin()), std::make_move_iterator(inv.env.end()));
  spec.launch.env = environment_.with(overrides);
  env_overrides().swap(overrides);  // its values are in the environment now; not kept twice
  spec.launch.working_dir = resolve_dir(options_.base_dir, inv.working_dir);
  spec.timeout = inv.timeout;
  spec.kill_grace = options_.kill_grace;
  spec.limits = options_.limits;
  spec.on_line = forward_lines(inv.on_line);
  spec.label = inv.instance_id;

  std::vector<std::string> warnings;
  auto r = co_await run_job(std::move(spec), std::move(inv.placement), warnings, std::move(inv.on_running));
  auto o = to_leaf_outcome(std::move(r), inv.timeout);
  o.warnings = std::move(warnings);
  co_return o;
}

const std::variant<resolved_agent, std::string>& process_step_runner::persona(const std::string& reference) {
  if (auto it = personas_.find(reference); it != personas_.end()) return it->second;
  return personas_.emplace(reference, resolve_agent(reference, options_.agents)).first->second;
}

std::vector<std::string> process_step_runner::agent_environment(const env_overrides& step_env) const {
  env_overrides overrides = {{"AMPLIHACK_SESSION_DEPTH", std::to_string(session_depth_ + 1)},
                             {"AMPLIHACK_TREE_ID", tree_id_}};
  overrides.insert(overrides.end(), options_.agent.env.begin(), options_.agent.env.end());
  overrides.insert(overrides.end(), step_env.begin(), step_env.end());
  auto env = environment_.with(overrides);
  // A nested Claude Code refuses to start inside another one's session marker.
  std::erase_if(env, [](const std::string& kv) { return kv.starts_with("CLAUDECODE="); });
  return env;
}

namespace {

// The PATH a child gets decides which program each command name runs: a cached output made
// under another PATH (another user's, an activated virtualenv) is other work (docs/caching.md).
std::string path_field(const std::vector<std::string>& env) {
  std::string_view path;
  for (const auto& kv : env)
    if (kv.starts_with("PATH=")) path = std::string_view(kv).substr(5);
  return fmt::format("path {}:{}", path.size(), path);
}

}  // namespace

leaf_identity process_step_runner::identity(const bash_invocation& inv) {
  return {resolve_dir(options_.base_dir, inv.working_dir), "bash\n" + path_field(environment_.with(inv.env)), {}};
}

leaf_identity process_step_runner::identity(const agent_invocation& inv) {
  leaf_identity id;
  id.working_dir = resolve_dir(options_.base_dir, inv.working_dir);
  // What run_agent would choose: the CLI (a custom command's whole template), the persona's
  // text and the model resolved from the step, its provider preferences and the persona.
  std::string system_prompt, agent_model;
  if (!inv.agent.empty()) {
    const auto& found = persona(inv.agent);
    if (const auto* agent = std::get_if<resolved_agent>(&found)) {
      system_prompt = agent->system_prompt;
      if (const auto* m = agent->front_matter.if_contains("model"); m && m->is_string()) agent_model = m->get_string();
    } else if (!options_.allow_missing_agents) {
      id.error = std::get<std::string>(found);
      return id;
    }
  }
  const auto model = choose_model(options_.agent, inv.model, inv.provider, inv.provider_preferences, agent_model);
  std::string cli = describe(options_.agent);
  for (const auto& word : options_.agent.command_template) cli += " " + word;
  id.text = fmt::format("cli {}:{}\nmodel {}:{}\nsystem {}:{}\nsuffix {}:{}\n{}", cli.size(), cli, model.model.size(),
                        model.model, system_prompt.size(), system_prompt, options_.agent.system_prompt_suffix.size(),
                        options_.agent.system_prompt_suffix, path_field(agent_environment(inv.env)));
  return id;
}

boost::asio::awaitable<leaf_outcome> process_step_runner::run_agent(agent_invocation inv) {
  leaf_outcome failed;
  agent_request request;
  request.prompt = std::move(inv.prompt);
  request.working_dir = resolve_dir(options_.base_dir, inv.working_dir);
  std::string agent_model;
  if (!inv.agent.empty()) {
    const auto& found = persona(inv.agent);
    if (const auto* agent = std::get_if<resolved_agent>(&found)) {
      request.system_prompt = agent->system_prompt;
      if (const auto* m = agent->front_matter.if_contains("model"); m && m->is_string()) agent_model = m->get_string();
    } else if (options_.allow_missing_agents) {
      failed.warnings.push_back(std::get<std::string>(found) + "; running with the agent CLI's default persona (--allow-missing-agents)");
    } else {
      failed.error = std::get<std::string>(found);
      co_return failed;
    }
  }
  auto model = choose_model(options_.agent, inv.model, inv.provider, inv.provider_preferences, agent_model);
  request.model = std::move(model.model);
  failed.warnings.insert(failed.warnings.end(), model.warnings.begin(), model.warnings.end());
  const auto* secrets = options_.limits.secrets;
  const secret_check holds_secret =
      secrets ? secret_check([secrets](std::string_view text) { return !secrets->clean(text); }) : secret_check{};
  const auto payload = compose_payload(options_.agent, request, holds_secret);
  process_spec spec;
  // The files live until the child has exited; the prompt never goes in one huge argv string.
  std::unique_ptr<private_temp_file> prompt_file, system_file;
  try {
    // Kept open when it is the child's stdin: no second open of the file.
    prompt_file = std::make_unique<private_temp_file>("arun-prompt-", payload.prompt, options_.temp_dir,
                                                      payload.prompt_on_stdin);
    if (payload.needs_system_prompt_file)
      system_file = std::make_unique<private_temp_file>("arun-system-prompt-", payload.system_prompt, options_.temp_dir);
  } catch (const std::system_error& e) {
    failed.error = std::string("cannot write the prompt to a temporary file: ") + e.what();
    co_return failed;
  }
  if (payload.prompt_on_stdin && prompt_file->fd() < 0) {
    failed.error = fmt::format("cannot rewind the prompt file {}: {}", prompt_file->path(), std::strerror(errno));
    co_return failed;
  }
  spec.launch.argv = agent_argv(options_.agent, payload, request, prompt_file->path(), system_file ? system_file->path() : "");
  // Every user can read a process's argv (ps, /proc/PID/cmdline): a secret never goes there,
  // whatever put it in a word (a model, a working directory, a template's text).
  if (holds_secret)
    for (std::size_t i = 0; i < spec.launch.argv.size(); ++i)
      if (holds_secret(spec.launch.argv[i])) {
        failed.error = fmt::format(
            "the agent CLI's command line would hold a secret (word {} of its argv), where other processes can read "
            "it; keep the secret out of the agent's model, working directory and --agent-command (docs/agents.md)",
            i);
        co_return failed;
      }
  spec.launch.env = agent_environment(inv.env);
  spec.launch.working_dir = request.working_dir;
  spec.launch.stdin_fd = prompt_file->fd();
  spec.timeout = inv.timeout;
  spec.kill_grace = options_.kill_grace;
  spec.limits = options_.limits;
  const auto format = reply_format_of(options_.agent);
  reply_line_filter filter(format);
  spec.on_line = format == reply_format::text ? forward_lines(inv.on_line) : filtered_lines(inv.on_line, filter);
  spec.label = inv.instance_id;
  const std::string program = spec.launch.argv.front();
  // For the transcript: what was asked, before the spec goes to the executor.
  const auto started = std::chrono::system_clock::now();
  auto argv = options_.on_agent_call ? spec.launch.argv : std::vector<std::string>{};
  auto r = co_await run_job(std::move(spec), std::move(inv.placement), failed.warnings, std::move(inv.on_running),
                            provider_name(options_.agent));
  if (!r.launched() && r.launch_error.find("not installed or not on PATH") != std::string::npos)
    r.launch_error = options_.agent.kind == agent_cli_kind::fake
                         ? fmt::format("the fake agent '{}' is not installed; set ARUN_FAKE_AGENT to its path", program)
                         : fmt::format("the agent CLI '{}' ({}) is not installed or not on PATH; choose another with "
                                       "--agent-cli or --agent-command (--agent-cli fake rehearses the recipe "
                                       "without one)",
                                       program, describe(options_.agent));
  leaf_outcome o;
  if (format == reply_format::text || !r.launched()) {
    o = to_leaf_outcome(std::move(r), inv.timeout);
    o.warnings = std::move(failed.warnings);
  } else {
    reply_context context;
    context.cli = describe(options_.agent);
    context.model = request.model;
    context.cut = r.out.truncated;
    auto report = take_reply(r, format, context, options_.limits, filter, inv.on_line);
    o = agent_outcome(std::move(r), inv.timeout, std::move(report), std::move(failed.warnings), options_.agent,
                      options_.prices.get());
  }
  if (options_.on_agent_call && o.started) {
    agent_call_record call;
    call.instance = inv.instance_id;
    call.started = started;
    call.ended = std::chrono::system_clock::now();
    call.argv = std::move(argv);
    call.model = request.model;
    call.system_prompt = request.system_prompt;
    call.prompt = request.prompt;
    call.reply = o.stdout_text;
    call.exit_code = o.exit_code;
    call.error = o.error;
    call.usage = o.usage;
    call.cut = o.truncated;
    options_.on_agent_call(call);
  }
  co_return o;
}

}  // namespace arun::io
