// `arun config`: the effective defaults (user_config.hpp) and where each came from.
#include "commands.hpp"
#include "exit_codes.hpp"
#include "run_output.hpp"
#include "user_config.hpp"

#include "files/json_text.hpp"
#include "output/result_format.hpp"
#include "session/session_store.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace arun::cli {

int config_command(const std::string& format) {
  const auto config = load_user_config();
  for (const auto& w : config.warnings) std::fprintf(stderr, "%s\n", w.c_str());
  for (const auto& e : config.errors) std::fprintf(stderr, "%s\n", e.c_str());
  // The session directory's default is where sessions go when nothing says otherwise.
  auto value_of = [&](const std::string& key) {
    const auto& v = config.value(key);
    return key == "session_dir" && v.empty() ? io::session_root("") : v;
  };
  if (format == "json") {
    boost::json::object doc = io::document_header();
    boost::json::object settings;
    for (const auto& [key, entry] : config.entries)
      settings[key] = boost::json::object{{"value", value_of(key)}, {"source", entry.source}};
    doc["settings"] = std::move(settings);
    doc["files"] = boost::json::array(config.files.begin(), config.files.end());
    doc["errors"] = boost::json::array(config.errors.begin(), config.errors.end());
    return write_json_stdout(doc) ? (config.errors.empty() ? exit_success : exit_usage) : exit_output_failed;
  }
  std::string text;
  for (const auto& [key, entry] : config.entries) text += fmt::format("{:<19} {:<12} {}\n", key, value_of(key), entry.source);
  text += config.files.empty() ? "no config file read (~/.config/arun/config.yaml, ./.arun.yaml)\n"
                               : "read: " + fmt::format("{}", fmt::join(config.files, ", ")) + "\n";
  if (!write_stdout(text)) return exit_output_failed;
  return config.errors.empty() ? exit_success : exit_usage;
}

}  // namespace arun::cli
