#pragma once
// Renders run events as progress on stderr (stdout is kept for the final result).

#include <arun/events.hpp>

#include "output/progress_loops.hpp"
#include "output/status_board.hpp"
#include "output/status_pause.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>
#include <string_view>

namespace arun::io {

/// plain: transition lines, and a status line after 30 s without any (logs, pipes, CI).
/// live: the same lines plus the status line (status_board.hpp) redrawn in place at the bottom
/// of a terminal.
enum class progress_mode { plain, live };

struct progress_options {
  progress_mode mode = progress_mode::plain;
  /// Echo output lines of steps outside loops, as `     ID | line`: the first 20 of each
  /// instance, each shortened to 200 columns (value_summary.hpp); the step's end line then
  /// says how many more its log has.
  bool show_output = true;
  /// -v: every instance, loop iterations and their bodies too, gets its start and end line and
  /// its output lines (prefixed with its instance id, like `parallel --tag`).
  bool verbose = false;
  /// Columns the live status line may use; 0: ask the terminal of `out` on each redraw
  /// ($COLUMNS, else 80, when it is not a terminal).
  std::size_t width = 0;
  /// What every printed line passes through (secrets masked); null: printed as is.
  std::function<std::string(std::string_view)> filter;
  /// ANSI colour: `ok` green, failures red, skipped dim, in lines and the status line.
  bool color = false;
  /// The log files holding an instance's output (stderr's first), named under its failure
  /// line; null: none are named.
  std::function<std::vector<std::string>(std::string_view instance)> log_files;
  /// Instances waiting where they run, with a note for the status line ("pending
  /// (JobHeldAdmin)"), asked at each redraw; null: none.
  std::function<std::vector<std::pair<std::string, std::string>>()> waiting;
  /// The time used to throttle live redraws; null: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

/// Progress lines for people. Steps outside loops get a start line and an end line. Inside
/// loop iterations (ids with `[`, docs/reference/formats.md, "Conventions") only failed or
/// cancelled instances are printed, plus, for each outermost loop, a summary every 10% of its items
/// (every 10 iterations of a while loop); their output lines and retries are not echoed. A warning
/// repeated with the same message by the same step (iteration indices ignored) prints once;
/// recipe_end reports how many were held back. Live mode draws the status line on `tick()` (at most
/// every 100 ms) and right after printing ordinary lines; it is cleared before every ordinary line,
/// at the end of the run and on destruction. While paused (a question is open on the terminal)
/// nothing is written: lines are held back (up to 1 MiB, the rest counted) and written on resume.
class progress_printer final : public event_listener, public redrawn_status {
public:
  explicit progress_printer(std::FILE* out = stderr, progress_options options = {});
  ~progress_printer() override;
  progress_printer(const progress_printer&) = delete;
  progress_printer& operator=(const progress_printer&) = delete;

  /// Never throws: progress is best effort (a closed or full stderr must not stop a run).
  void on_event(const event& e) noexcept override;

  /// Erases the live status line if it is shown; the next event draws it again. Call it
  /// before writing to the same terminal yourself (an approval question, a diagnostic).
  void clear_status() noexcept;

  /// Call ten times a second: live, the status line is brought up to date; plain, the status
  /// is printed as a line after 30 s without any line.
  void tick() noexcept;

  /// status_pause.hpp: the status line is erased and nothing is written until resume().
  void pause() noexcept override;
  void resume() noexcept override;

private:
  void handle(const event& e);
  void on_step_start(const event& e);
  void on_step_end(const event& e);
  void on_output(const event& e);
  void on_retry(const event& e);
  void on_warning(const event& e);
  void on_limit_changed(const event& e);
  void on_recipe_end(const event& e);
  void add_line(std::string line) { pending_ += std::move(line) + '\n'; }
  void flush_pending();
  void redraw(bool force);
  std::chrono::steady_clock::time_point now() const;
  std::size_t width() const;

  std::FILE* out_;
  progress_options options_;
  detail::loop_tracker loops_;
  status_board board_;
  std::set<std::pair<std::string, std::string>, std::less<>> warnings_seen_;
  /// First lines of the errors the step lines showed: the run's last line does not repeat one.
  std::set<std::string, std::less<>> errors_shown_;
  std::size_t warnings_repeated_ = 0;
  int recipe_depth_ = 0;
  std::string session_id_;
  std::unordered_map<std::string, std::size_t> echoed_;  ///< output lines seen per running instance
  std::string pending_;          ///< ordinary lines of the current event
  int paused_ = 0;               ///< questions open on the terminal
  std::string held_;             ///< lines written while paused, for resume()
  std::size_t lines_dropped_ = 0;  ///< lines beyond held_'s bound
  bool force_redraw_ = false;    ///< live: redraw now, whatever the throttle says
  std::string status_shown_;     ///< live: what the terminal shows, empty when nothing
  std::optional<std::chrono::steady_clock::time_point> last_draw_;  ///< live: when the status was drawn
  std::optional<std::chrono::steady_clock::time_point> last_line_;  ///< plain: when a line was printed
};

}  // namespace arun::io
