// `arun report ID` (docs/report-and-dashboard.md): the session's report as one HTML file, or
// its data as JSON.
#include "commands.hpp"
#include "exit_codes.hpp"
#include "run_output.hpp"
#include "session_argument.hpp"

#include "files/json_text.hpp"
#include "report/report_html.hpp"
#include "report/session_report.hpp"
#include "session/session_store.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace arun::cli {

int report_command(const report_settings& s) {
  const auto named = find_named_session(s.session_dir, s.session_id);
  if (!named) return exit_usage;
  auto report = io::session_report(named->root, named->id, std::chrono::system_clock::now());
  if (auto* error = std::get_if<std::string>(&report)) {
    std::fprintf(stderr, "arun: cannot report on session %s: %s\n", named->id.c_str(), error->c_str());
    return exit_usage;  // as sessions show: the session cannot be read
  }
  const auto& document = std::get<boost::json::object>(report);
  const bool html = s.output_format == "html";
  const auto text = html ? io::report_html(document) : io::to_json_text(document) + "\n";
  const auto file = s.output.empty() ? (html ? "arun-report-" + named->id + ".html" : "-") : s.output;
  if (file == "-") return write_stdout(text) ? exit_success : exit_output_failed;
  // Written whole or not at all, the owner's only: the report holds the steps' output.
  if (const auto error = io::write_file_atomically(file, text); !error.empty()) {
    std::fprintf(stderr, "arun: cannot write the report: %s\n", error.c_str());
    return exit_output_failed;
  }
  const auto size = text.size() >= 1024 * 1024 ? fmt::format("{:.1f} MiB", static_cast<double>(text.size()) / (1024 * 1024))
                                               : fmt::format("{} KiB", (text.size() + 1023) / 1024);
  std::fprintf(stderr, "arun: wrote %s (%s)\n", file.c_str(), size.c_str());
  return exit_success;
}

}  // namespace arun::cli
