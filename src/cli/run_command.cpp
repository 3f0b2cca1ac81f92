#include "commands.hpp"
#include "exit_codes.hpp"

#include "process/supervisor.hpp"
#include "process_step_runner.hpp"
#include "progress_printer.hpp"
#include "result_format.hpp"
#include "step_environment.hpp"

#include <arun/engine.hpp>
#include <arun/value_format.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>

namespace arun::cli {
namespace {

namespace asio = boost::asio;

unsigned random_bits() {
  std::random_device rd;
  return rd();
}

std::optional<std::string> absolute_dir(const std::string& dir, std::string& problem) {
  std::error_code ec;
  const std::filesystem::path given = dir.empty() ? std::string(".") : dir;
  auto path = std::filesystem::absolute(given, ec);
  if (ec || !std::filesystem::is_directory(path, ec)) {
    problem = "working directory '" + dir + "' does not exist or is not a directory";
    return std::nullopt;
  }
  return path.lexically_normal().string();
}

}  // namespace

int run_command(const run_settings& s) {
  auto input = load_recipe_input(s.recipe, true);
  if (!input.value) return input.exit_code;
  const recipe& loaded = *input.value;

  std::string problem;
  const auto base_dir = absolute_dir(s.recipe.working_dir, problem);
  if (!base_dir) {
    std::fprintf(stderr, "arun: %s\n", problem.c_str());
    return exit_usage;
  }

  io::runner_options ro;
  ro.base_dir = *base_dir;
  ro.kill_grace = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s.kill_grace));
  ro.limits.max_bytes = s.max_output;
  ro.inherited_env = io::current_environment();
  io::process_step_runner runner(std::move(ro));
  io::progress_printer progress;
  struct silent_listener final : event_listener {
    void on_event(const event&) noexcept override {}
  } silent;
  recipe_engine eng(runner, s.quiet ? static_cast<event_listener&>(silent) : progress);

  asio::io_context ctx;
  asio::cancellation_signal cancel;
  int stop_signal = 0;
  asio::signal_set signals(ctx, SIGINT, SIGTERM);
  // The first signal stops the run gracefully; a second one kills every step at once.
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
        if (stop_signal == 0) {
          stop_signal = sig;
          std::fprintf(stderr, "arun: %s received, stopping running steps (again to kill them now)\n", name);
          cancel.emit(asio::cancellation_type::terminal);
          signals.async_wait(on_signal);
          return;
        }
        std::fprintf(stderr, "arun: second %s: killing every running step\n", name);
        io::kill_all_supervised_processes();
        std::_Exit(128 + sig);
      };
  signals.async_wait(on_signal);

  std::optional<run_result> result;
  std::exception_ptr failure;
  run_options options;
  options.session_id = make_session_id(std::chrono::system_clock::now(), random_bits());
  options.working_dir = *base_dir;
  options.templates = s.recipe.strict ? template_mode::strict : s.recipe.lenient ? template_mode::lenient : template_mode::normal;
  asio::co_spawn(ctx, eng.run(loaded, options),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, run_result r) {
                   failure = e;
                   result = std::move(r);
                   signals.cancel();
                 }));
  ctx.run();
  if (failure) std::rethrow_exception(failure);

  if (s.output_format == "json")
    std::fputs((to_compact_json(io::result_to_json(*result)) + "\n").c_str(), stdout);
  else
    std::fputs(io::result_to_text(*result).c_str(), stdout);
  std::fflush(stdout);

  if (stop_signal != 0) return 128 + stop_signal;
  return result->success() ? exit_success : exit_recipe_failed;
}

void add_run_options(CLI::App& app, run_settings& s) {
  add_recipe_options(app, s.recipe);
  app.add_option("--output-format", s.output_format, "Final result on stdout: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--kill-grace", s.kill_grace,
                 "Seconds between SIGTERM and SIGKILL when a step times out or is cancelled")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--max-output", s.max_output, "Bytes of each step's stdout/stderr kept (default 10 MiB)")
      ->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", s.quiet, "No progress on stderr");
}

}  // namespace arun::cli
