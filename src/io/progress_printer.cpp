#include "progress_printer.hpp"

#include <fmt/format.h>

#include <chrono>

namespace arun::io {
namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

std::string_view first_line(std::string_view text) { return text.substr(0, text.find('\n')); }

}  // namespace

void progress_printer::on_event(const event& e) noexcept {
  try {
    switch (e.kind) {
      case event_kind::recipe_start:
        fmt::print(out_, "arun: running '{}' (session {})\n", e.recipe_name, e.session_id);
        break;
      case event_kind::step_start:
        fmt::print(out_, "  -> {}\n", e.step);
        break;
      case event_kind::step_output:
        if (options_.show_output)
          fmt::print(out_, "     {} | {}{}\n", e.step, e.line, e.line_truncated ? " [line cut]" : "");
        break;
      case event_kind::step_end: {
        const auto& r = *e.result;
        const bool bad = r.status == step_status::failed || r.status == step_status::cancelled;
        fmt::print(out_, "  {} {} {} ({:.2f}s){}{}\n", r.status == step_status::completed ? "ok" : bad ? "!!" : "--",
                   e.step, to_string(r.status), seconds(r.duration), r.error.empty() ? "" : ": ",
                   first_line(r.error));
        break;
      }
      case event_kind::warning:
        fmt::print(out_, "  warning: {}: {}\n", e.step, e.message);
        break;
      case event_kind::recipe_end:
        fmt::print(out_, "arun: '{}' {} in {:.2f}s\n", e.recipe_name, to_string(e.run->status),
                   seconds(e.run->duration));
        break;
      default:
        break;
    }
    std::fflush(out_);
  } catch (...) {
    // Progress is best effort: a full disk or closed stderr must not stop the run.
  }
}

}  // namespace arun::io
