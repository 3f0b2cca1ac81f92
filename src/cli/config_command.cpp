// `arun config`: the effective defaults (user_config.hpp) and where each came from, and
// whether the project's ./.arun.yaml is trusted; `arun config trust|untrust [FILE]` record the
// user's trust of a project file's content (docs/security.md, "A project's .arun.yaml").
#include "commands.hpp"
#include "exit_codes.hpp"
#include "run_output.hpp"
#include "user_config.hpp"

#include "files/json_text.hpp"
#include "output/result_format.hpp"
#include "session/session_store.hpp"
#include "trust/inspected_file.hpp"
#include "trust/trust_store.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace arun::cli {
namespace {
namespace fs = std::filesystem;

boost::json::object project_json(const project_file& p) {
  return {{"path", p.path},
          {"present", p.present},
          {"real_path", p.real_path},
          {"symlink", p.symlink},
          {"trusted", p.trusted},
          {"state", p.state},
          {"reason", p.reason},
          {"ignored", boost::json::array(p.ignored.begin(), p.ignored.end())},
          {"fix", p.fix}};
}

std::string project_text(const project_file& p) {
  if (!p.present) return "project file: none (" + p.path + ")\n";
  if (p.state == "unreadable") return "project file: " + p.path + " " + p.reason + " (ignored)\n";
  std::string line = "project file: " + p.path;
  if (p.symlink) line += " (a link to " + p.real_path + ")";
  line += " " + p.reason;
  if (!p.ignored.empty()) line += fmt::format(": ignored {}", fmt::join(p.ignored, ", "));
  if (!p.fix.empty()) line += " (" + p.fix + ")";
  return line + "\n";
}

// The trust record, or an error printed (a damaged record is the user's to look at, never
// overwritten).
std::optional<io::trust_store> usable_store() {
  auto store = io::read_trust_store();
  if (store.error.empty()) return store;
  std::fprintf(stderr, "arun: cannot use the trust record: %s (fix or remove %s)\n", store.error.c_str(),
               store.path.empty() ? "it" : store.path.c_str());
  return std::nullopt;
}

int trust(const std::string& path, io::trust_store& store) {
  const auto file = io::inspect_file(path, max_config_file_bytes);
  if (!file.present) {
    std::fprintf(stderr, "arun: %s does not exist: nothing to trust\n", path.c_str());
    return exit_usage;
  }
  if (!file.error.empty() || !file.refusal.empty()) {
    const bool refused = file.error.empty();
    std::fprintf(stderr, "arun: refusing to trust %s: %s%s\n", path.c_str(), (refused ? file.refusal : file.error).c_str(),
                 refused ? " (make it and its directory yours and writable only by you: chown, chmod go-w)" : "");
    return exit_usage;
  }
  store.files[file.real_path] = {file.sha256, io::trust_timestamp()};
  if (std::string error; !io::write_trust_store(store, error)) {
    std::fprintf(stderr, "arun: %s\n", error.c_str());
    return exit_store_failed;
  }
  // A record in a directory others can write is written but never believed: say so now.
  if (const auto check = io::read_trust_store(store.path); !check.error.empty()) {
    std::fprintf(stderr, "arun: the trust was recorded but cannot be used: %s (chmod go-w)\n", check.error.c_str());
    return exit_usage;
  }
  std::fprintf(stderr, "arun: trusted %s (%s, sha256 %s) until it changes; 'arun config' shows what it sets\n",
               path.c_str(), file.real_path.c_str(), file.sha256.substr(0, 12).c_str());
  return exit_success;
}

int untrust(const std::string& path, io::trust_store& store) {
  std::error_code ec;
  auto real = fs::canonical(path, ec);
  if (ec) real = fs::absolute(path, ec).lexically_normal();  // a file gone since: its old name
  if (store.files.erase(real.string()) == 0) {
    std::fprintf(stderr, "arun: %s (%s) was not trusted\n", path.c_str(), real.c_str());
    return exit_success;
  }
  if (std::string error; !io::write_trust_store(store, error)) {
    std::fprintf(stderr, "arun: %s\n", error.c_str());
    return exit_store_failed;
  }
  std::fprintf(stderr, "arun: %s (%s) is no longer trusted\n", path.c_str(), real.c_str());
  return exit_success;
}

}  // namespace

int config_command(const std::string& format) {
  const auto config = load_user_config();
  // The project file's line is part of what this command prints on stdout.
  for (const auto& w : config.warnings)
    if (w != config.project.warning) std::fprintf(stderr, "%s\n", w.c_str());
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
    doc["project_file"] = project_json(config.project);
    doc["errors"] = boost::json::array(config.errors.begin(), config.errors.end());
    return write_json_stdout(doc) ? (config.errors.empty() ? exit_success : exit_usage) : exit_output_failed;
  }
  std::string text;
  for (const auto& [key, entry] : config.entries) text += fmt::format("{:<19} {:<12} {}\n", key, value_of(key), entry.source);
  text += config.files.empty() ? "no config file read (~/.config/arun/config.yaml, ./.arun.yaml)\n"
                               : "read: " + fmt::format("{}", fmt::join(config.files, ", ")) + "\n";
  text += project_text(config.project);
  if (!write_stdout(text)) return exit_output_failed;
  return config.errors.empty() ? exit_success : exit_usage;
}

int config_trust_command(const std::string& file, bool trusting) {
  const std::string path = file.empty() ? ".arun.yaml" : file;
  auto store = usable_store();
  if (!store) return exit_usage;
  return trusting ? trust(path, *store) : untrust(path, *store);
}

}  // namespace arun::cli
