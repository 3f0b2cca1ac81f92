#include "output/progress_printer.hpp"

#include "output/output_values.hpp"
#include "output/result_format.hpp"
#include "output/value_summary.hpp"

#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace arun::io {
namespace {

constexpr auto redraw_interval = std::chrono::milliseconds(100);
constexpr auto plain_status_interval = std::chrono::seconds(30);
constexpr std::size_t echoed_lines = 20;     // per instance, without -v
constexpr std::size_t echoed_columns = 200;  // a longer line is shortened
constexpr std::size_t fallback_width = 80;
constexpr const char* erase_line = "\r\x1b[K";
constexpr std::size_t held_bytes = 1 << 20;  // lines held while a question is open

// "60s", "2.5s", "0.25s": people read these, so no trailing zeros.
std::string short_duration(std::chrono::nanoseconds d) {
  const double s = seconds_of(d);
  std::string text = s >= 10 ? fmt::format("{:.0f}", s) : fmt::format("{:.2f}", s);
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text + "s";
}

bool is_bad(step_status s) { return s == step_status::failed || s == step_status::cancelled; }

std::string status_mark(step_status s, bool color) {
  const std::string_view mark = s == step_status::completed ? "ok" : is_bad(s) ? "!!" : "--";
  if (!color) return std::string(mark);
  // Green, red, dim: the three outcomes a reader scans for.
  const std::string_view code = s == step_status::completed ? "32" : is_bad(s) ? "31" : "2";
  return fmt::format("\x1b[{}m{}\x1b[0m", code, mark);
}

std::string step_end_line(const event& e, const step_result& r, bool color) {
  std::string line = fmt::format("  {} {} {}", status_mark(r.status, color), e.step, r.cached ? "cached" : to_string(r.status));
  if (r.ran() || r.queued) line += fmt::format(" ({})", duration_text(r));
  if (r.iterations) {
    line += fmt::format(" {}/{} iterations completed", r.iterations->completed, r.iterations->total);
    if (r.iterations->cached > 0) line += fmt::format(" ({} cached)", r.iterations->cached);
    if (r.iterations->failed > 0) line += fmt::format(", {} failed", r.iterations->failed);
    if (r.iterations->waiting > 0) line += fmt::format(", {} waiting for approval", r.iterations->waiting);
    if (r.iterations->cancelled > 0) line += fmt::format(", {} cancelled", r.iterations->cancelled);
    if (r.iterations->not_run > 0) line += fmt::format(", {} not run", r.iterations->not_run);
  }
  if (r.error.empty()) return line;
  line += fmt::format(": {}", first_line(r.error));
  // The failure snippet (the child's last lines) follows the first line: show its last
  // non-empty line too, which is usually the reason ("jq: error ...", "item 4 is bad").
  const std::string_view all(r.error);
  if (const auto newline = all.find('\n'); newline != std::string_view::npos) {
    auto rest = all.substr(newline + 1);
    // stderr's tail comes before stdout's: the reason is there (an agent's reply is stdout).
    if (const auto out = rest.find("\n--- stdout ---\n"); out != std::string_view::npos) rest = rest.substr(0, out);
    rest = rest.substr(0, rest.find_last_not_of("\n ") + 1);  // npos + 1 == 0: all blank
    const auto last = rest.substr(rest.rfind('\n') + 1);     // npos + 1 == 0: one line
    if (!last.empty() && last.size() <= 300) line += fmt::format(" | {}", last);
  }
  return line;
}

// A plain-mode summary is due every 10% of a foreach's items (every 10 iterations of a while
// loop), but not at the very end: the loop's own end line says that.
bool summary_due(const detail::loop_progress& l) {
  if (!l.items) return l.done % 10 == 0;
  if (l.done >= *l.items) return false;
  const std::size_t every = std::max<std::size_t>(1, (*l.items + 9) / 10);
  return l.done % every == 0;
}

std::string summary_line(const detail::loop_progress& l) {
  std::string line = l.items ? fmt::format("  .. {} {}/{} iterations done, {} failed", l.id, l.done, *l.items, l.failed)
                             : fmt::format("  .. {} {} iterations done, {} failed", l.id, l.done, l.failed);
  if (l.cancelled > 0) line += fmt::format(", {} cancelled", l.cancelled);
  if (l.cached > 0) line += fmt::format(", {} cached", l.cached);
  if (l.retries > 0) line += fmt::format(", {} retries", l.retries);
  return line;
}

}  // namespace

progress_printer::progress_printer(std::FILE* out, progress_options options)
    : out_(out), options_(std::move(options)) {}

progress_printer::~progress_printer() { clear_status(); }

void progress_printer::on_event(const event& e) noexcept {
  try {
    handle(e);
    flush_pending();
  } catch (...) {
    // Progress is best effort: a full disk or closed stderr must not stop the run.
    pending_.clear();
  }
}

void progress_printer::clear_status() noexcept {
  if (status_shown_.empty()) return;
  std::fputs(erase_line, out_);
  std::fflush(out_);
  status_shown_.clear();
  force_redraw_ = true;  // the next event or tick draws it again
}

void progress_printer::pause() noexcept {
  if (paused_++ == 0) clear_status();
}

void progress_printer::resume() noexcept {
  if (paused_ == 0 || --paused_ > 0) return;
  try {
    std::fputs(std::exchange(held_, {}).c_str(), out_);  // masked when held
    if (const auto dropped = std::exchange(lines_dropped_, 0); dropped > 0)
      add_line(fmt::format("  ({} progress lines not shown while a question was open)", dropped));
    force_redraw_ = true;
    flush_pending();
  } catch (...) {
    pending_.clear();
  }
}

void progress_printer::tick() noexcept {
  if (paused_ > 0) return;  // the question stays the last thing on the screen
  try {
    if (options_.waiting) {
      const auto waiting = options_.waiting();
      board_.set_notes({waiting.begin(), waiting.end()});
    }
    if (options_.mode == progress_mode::live) {
      redraw(std::exchange(force_redraw_, false));
      std::fflush(out_);
      return;
    }
    const auto t = now();
    if (!board_.active() || (last_line_ && t - *last_line_ < plain_status_interval)) return;
    if (!last_line_) {
      last_line_ = t;  // the first tick: the clock starts
      return;
    }
    const auto status = board_.render(loops_, 160, t, false);
    if (!status.empty()) {
      add_line("  .. " + status);
      flush_pending();
    }
  } catch (...) {
    pending_.clear();
  }
}

void progress_printer::handle(const event& e) {
  board_.on_event(e, now());
  switch (e.kind) {
    case event_kind::recipe_start:
      // A sub-recipe's run may report its own start and end; only the outermost is shown.
      if (recipe_depth_++ == 0) {
        session_id_ = e.session_id;
        add_line(fmt::format("arun: running '{}' (session {})", e.recipe_name, e.session_id));
      }
      break;
    case event_kind::step_start: on_step_start(e); break;
    case event_kind::step_output: on_output(e); break;
    case event_kind::step_heartbeat:
      add_line(fmt::format("  .. {} still running ({})", e.step, short_duration(e.elapsed)));
      break;
    case event_kind::step_retry: on_retry(e); break;
    case event_kind::step_end: on_step_end(e); break;
    case event_kind::approval_requested: add_line(fmt::format("  ?? {} waits for approval", e.step)); break;
    case event_kind::warning: on_warning(e); break;
    case event_kind::limit_changed: on_limit_changed(e); break;
    case event_kind::recipe_end: on_recipe_end(e); break;
  }
}

void progress_printer::on_limit_changed(const event& e) {
  // Every decrease, and the return to the full limit; not each step of the climb.
  const auto& g = e.group;
  if (e.message == "rate limited")
    add_line(fmt::format("  !! {}: rate limited; at most {} at once now ({} running)", g.name, g.limit, g.running));
  else if (g.limit == 0 || (g.configured && g.limit >= *g.configured))
    add_line(g.limit == 0 ? fmt::format("  .. {}: no longer limited", g.name)
                          : fmt::format("  .. {}: back to {} at once", g.name, g.limit));
}

void progress_printer::on_step_start(const event& e) {
  loops_.follow(e);
  if (detail::inside_iteration(e.step) && !options_.verbose) return;
  std::string line = fmt::format("  -> {}", e.step);
  if (e.items) line += fmt::format(" ({} items)", *e.items);
  if (e.attempt > 1) line += fmt::format(" (attempt {})", e.attempt);
  add_line(std::move(line));
}

void progress_printer::on_output(const event& e) {
  if (!options_.show_output || (!options_.verbose && detail::inside_iteration(e.step))) return;
  if (options_.verbose) {  // -v: every line, whole
    add_line(fmt::format("     {} | {}{}", e.step, e.line, e.line_truncated ? " [line cut]" : ""));
    return;
  }
  if (++echoed_[e.step] > echoed_lines) return;
  // Masked before it is shortened: a cut through a secret would leave its beginning.
  const auto line = options_.filter ? options_.filter(e.line) : std::string(e.line);
  add_line(fmt::format("     {} | {}{}", e.step, shortened_line(line, echoed_columns), e.line_truncated ? " [line cut]" : ""));
}

void progress_printer::on_step_end(const event& e) {
  if (const auto it = echoed_.find(e.step); it != echoed_.end()) {
    if (it->second > echoed_lines)
      add_line(fmt::format("     {} | … {} more lines: arun logs {} '{}'", e.step, thousands(it->second - echoed_lines),
                           session_id_, e.step));
    echoed_.erase(it);
  }
  if (e.result == nullptr) return;
  const bool bad = is_bad(e.result->status);
  // The instance's own line first, then the loop summary it may complete.
  if (!detail::inside_iteration(e.step) || bad || options_.verbose) {
    add_line(step_end_line(e, *e.result, options_.color));
    if (!e.result->error.empty()) errors_shown_.emplace(first_line(e.result->error));
    if (bad && options_.log_files)
      if (const auto files = options_.log_files(e.step); !files.empty()) add_line(fmt::format("     log: {}", files.front()));
  }
  const auto followed = loops_.follow(e);
  if (followed.loop_ended) force_redraw_ = true;
  // Live mode shows the counts in the status line; nested loops are summarised by the outer.
  const auto* loop = followed.iteration_of;
  if (loop && options_.mode == progress_mode::plain && !loop->nested() && summary_due(*loop)) add_line(summary_line(*loop));
}

void progress_printer::on_retry(const event& e) {
  loops_.follow(e);
  if (detail::inside_iteration(e.step)) return;
  const auto why = first_line(e.message);
  add_line(fmt::format("  .. {} attempt {} failed{}{}{}; retrying in {}", e.step, e.attempt, why.empty() ? "" : " (",
                       why, why.empty() ? "" : ")", short_duration(e.delay)));
}

void progress_printer::on_warning(const event& e) {
  if (!warnings_seen_.emplace(detail::without_indices(e.step), e.message).second) {
    ++warnings_repeated_;
    return;
  }
  add_line(e.step.empty() ? fmt::format("  warning: {}", e.message) : fmt::format("  warning: {}: {}", e.step, e.message));
}

void progress_printer::on_recipe_end(const event& e) {
  if (recipe_depth_ > 0) --recipe_depth_;
  if (recipe_depth_ > 0) return;
  loops_.clear();
  force_redraw_ = true;
  if (warnings_repeated_ > 0)
    add_line(fmt::format("  ({} repeated warnings not shown)", std::exchange(warnings_repeated_, 0)));
  if (e.run == nullptr) {
    add_line(fmt::format("arun: '{}' ended", e.recipe_name));
    return;
  }
  std::string line = fmt::format("arun: '{}' {} in {:.2f}s", e.recipe_name, to_string(e.run->status),
                                 seconds_of(e.run->duration));
  // The failure that ended the run was said where it happened: said once (its step's line).
  if (!e.run->error.empty() && !errors_shown_.contains(first_line(e.run->error)))
    line += fmt::format(": {}", first_line(e.run->error));
  add_line(std::move(line));
}

void progress_printer::flush_pending() {
  if (paused_ > 0) {  // held back, masked already, for resume()
    if (options_.filter) pending_ = options_.filter(pending_);
    if (held_.size() + pending_.size() <= held_bytes)
      held_ += pending_;
    else
      lines_dropped_ += static_cast<std::size_t>(std::count(pending_.begin(), pending_.end(), '\n'));
    pending_.clear();
    return;
  }
  const bool live = options_.mode == progress_mode::live;
  if (!pending_.empty()) {
    if (live) clear_status();
    if (options_.filter) pending_ = options_.filter(pending_);
    std::fputs(pending_.c_str(), out_);
    pending_.clear();
    last_line_ = now();
    // Repaint right away: a status line missing until the next event (maybe minutes away
    // when iterations are long) would look like a stalled run.
    force_redraw_ = true;
  }
  // Otherwise the tick draws the change: drawn at the first event after the throttle, the
  // line would mostly show the moment a step ended, never one running.
  if (live && force_redraw_) redraw(std::exchange(force_redraw_, false));
  std::fflush(out_);
}

void progress_printer::redraw(bool force) {
  const auto t = now();
  if (!force && last_draw_ && t - *last_draw_ < redraw_interval) return;
  const std::size_t columns = width();
  // One column short of the width: a line as wide as the terminal wraps on some of them.
  std::string line = board_.render(loops_, columns > 1 ? columns - 1 : columns, t, options_.color);
  last_draw_ = t;
  if (line == status_shown_) return;
  if (line.empty()) {
    clear_status();
    force_redraw_ = false;
    return;
  }
  std::fputs(erase_line, out_);
  std::fputs(line.c_str(), out_);
  status_shown_ = std::move(line);
}

std::chrono::steady_clock::time_point progress_printer::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

std::size_t progress_printer::width() const {
  if (options_.width > 0) return options_.width;
  winsize size{};
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  // Not a terminal (`--progress live` through tee): $COLUMNS, as the shell exports it.
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && n > 0 && n < 10000) return static_cast<std::size_t>(n);
  }
  return fallback_width;
}

}  // namespace arun::io
