#include "output/arun_log.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace arun::io {
namespace {

std::shared_ptr<spdlog::logger> make_null() {
  return std::make_shared<spdlog::logger>("arun", std::make_shared<spdlog::sinks::null_sink_mt>());
}

std::shared_ptr<spdlog::logger>& current() {
  static std::shared_ptr<spdlog::logger> logger = make_null();
  return logger;
}

}  // namespace

spdlog::logger& arun_log() { return *current(); }

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  for (const auto& [name, level] : {std::pair{"off", spdlog::level::off}, {"error", spdlog::level::err},
                                    {"warn", spdlog::level::warn}, {"info", spdlog::level::info},
                                    {"debug", spdlog::level::debug}, {"trace", spdlog::level::trace}})
    if (text == name) return level;
  return std::nullopt;
}

std::string open_arun_log(const arun_log_options& options) {
  if (options.level == spdlog::level::off) return {};
  std::vector<spdlog::sink_ptr> sinks;
  try {
    if (!options.file.empty()) {
      spdlog::file_event_handlers handlers;
      // The log names programs and directories of the user's steps: the owner's only, like
      // everything else in a session (rotated files too).
      handlers.after_open = [](const spdlog::filename_t&, std::FILE* f) { ::fchmod(::fileno(f), 0600); };
      sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(options.file, 10u << 20, 3, false, handlers));
    }
    if (options.to_stderr) sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } catch (const spdlog::spdlog_ex& e) {
    return std::string("cannot open arun's log: ") + e.what();
  }
  if (sinks.empty()) return {};
  auto logger = std::make_shared<spdlog::logger>("arun", sinks.begin(), sinks.end());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %-5l [%t] %v");
  logger->set_level(options.level);
  // Every line reaches the file at once: what is there when arun is killed is what a bug
  // report needs. The volume is small (a few lines per child at debug).
  logger->flush_on(spdlog::level::trace);
  current() = std::move(logger);
  return {};
}

void close_arun_log() noexcept {
  try {
    current()->flush();
    current() = make_null();
  } catch (...) {
  }
}

}  // namespace arun::io
