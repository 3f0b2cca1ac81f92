#pragma once
// A question on the terminal and the live status line (docs/running.md, "The status line"):
// while someone is asked something (an approval, a secret), the status line is erased and
// stands still, as apt's and cargo's prompts make theirs, so that the question stays the last
// thing on the screen and the typed answer is never drawn over.

namespace arun::io {

/// Something redrawn in place at the bottom of the terminal (progress_printer's status line).
class redrawn_status {
public:
  /// Erase it and draw nothing more until resume(): ordinary progress lines are held back too.
  /// Pauses nest.
  virtual void pause() noexcept = 0;
  /// Undo one pause(); after the last, write what was held back and draw the line again.
  virtual void resume() noexcept = 0;

protected:
  ~redrawn_status() = default;
};

/// For as long as it lives, `status` (may be null) is the one a question pauses. One at a time:
/// it replaces the one registered before and puts it back when it goes.
class status_registration {
public:
  explicit status_registration(redrawn_status* status) noexcept;
  ~status_registration();
  status_registration(const status_registration&) = delete;
  status_registration& operator=(const status_registration&) = delete;

private:
  redrawn_status* before_;
};

/// For as long as it lives, the registered status (if any) is paused. Create it before writing
/// a question; the status comes back when it goes.
class status_paused {
public:
  status_paused() noexcept;
  ~status_paused();
  status_paused(const status_paused&) = delete;
  status_paused& operator=(const status_paused&) = delete;

private:
  redrawn_status* paused_;
};

}  // namespace arun::io
