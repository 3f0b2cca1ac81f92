#pragma once
// What a question asked on the terminal needs while it is open (docs/running.md, "The status
// line"): the live status line erased and standing still, and typing shown or hidden as the
// question wants, whatever the terminal was set to; everything as it was afterwards.

#include "output/status_pause.hpp"

#include <termios.h>

namespace arun::cli {

class terminal_question {
public:
  /// For as long as it lives: the status line is paused (io::status_paused) and the terminal
  /// on `fd` reads lines with `echo` on (an approval's answer) or off (a secret; discarding what
  /// was typed ahead). Nothing changes on `fd` when it is not a terminal.
  terminal_question(int fd, bool echo);
  ~terminal_question();
  terminal_question(const terminal_question&) = delete;
  terminal_question& operator=(const terminal_question&) = delete;

private:
  io::status_paused paused_;
  int fd_;
  bool echo_;
  termios saved_{};
  bool changed_ = false;
};

}  // namespace arun::cli
