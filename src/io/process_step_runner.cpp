#include "process_step_runner.hpp"

#include "process/supervisor.hpp"
#include "shell_exports.hpp"
#include "step_environment.hpp"
#include "temp_file.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string.h>
#include <system_error>

namespace arun::io {
namespace {

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

}  // namespace

boost::asio::awaitable<leaf_outcome> process_step_runner::run_bash(bash_invocation inv) {
  process_spec spec;
  // Temp files (large variables, large bodies) live until the child has exited.
  std::optional<shell_exports> exports;
  std::unique_ptr<private_temp_file> body_file;
  std::string body;
  try {
    std::vector<shell_export> variables;
    for (auto& v : inv.exports) variables.push_back({std::move(v.name), std::move(v.value), v.by_file});
    exports.emplace(variables);
    body = exports->wrap(inv.command);
    if (body.size() > max_inline_body_bytes) {
      // One argv string is limited to 128 KiB (MAX_ARG_STRLEN): large bodies go by file.
      body_file = std::make_unique<private_temp_file>("arun-body-", body);
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
  // SPEC §3.3 order: inherited, hardening, the context export, then the step's own env.
  env_overrides overrides = exports->environment();
  overrides.insert(overrides.end(), inv.env.begin(), inv.env.end());
  spec.launch.env = environment_.with(overrides);
  spec.launch.working_dir = resolve_dir(options_.base_dir, inv.working_dir);
  spec.timeout = inv.timeout;
  spec.kill_grace = options_.kill_grace;
  spec.limits = options_.limits;
  if (inv.on_line) {
    spec.on_line = [&on_line = inv.on_line](stream_id s, std::string_view line, bool cut) {
      on_line(s == stream_id::out ? output_stream::out : output_stream::err, line, cut);
    };
  }

  auto r = co_await run_process(std::move(spec));

  leaf_outcome o;
  o.duration = r.duration;
  if (!r.launched()) {
    o.error = r.launch_error;
    co_return o;
  }
  o.started = true;
  o.exit_code = r.exit_code;
  o.signal = r.signal;
  o.timed_out = r.timed_out;
  o.cancelled = r.cancelled;
  o.truncated = r.out.truncated || r.err.truncated;
  o.stdout_text = std::move(r.out.text);
  if (!r.succeeded()) {
    o.error = describe_failure(r, inv.timeout);
    o.snippet = failure_snippet(r.err, r.out);
  }
  co_return o;
}

}  // namespace arun::io
