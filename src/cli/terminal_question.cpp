#include "terminal_question.hpp"

#include <unistd.h>

namespace arun::cli {

terminal_question::terminal_question(int fd, bool echo) : fd_(fd), echo_(echo) {
  if (::tcgetattr(fd_, &saved_) != 0) return;
  termios asked = saved_;
  if (echo_) {
    // Lines, echoed: a terminal left quiet (`stty -echo`, a child that died raw) would take
    // the answer unseen.
    asked.c_lflag |= ECHO | ICANON;
  } else {
    asked.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    asked.c_lflag |= ECHONL | ICANON;  // the Enter still ends the line on the screen
  }
  if (asked.c_lflag == saved_.c_lflag) return;
  // A secret is typed fresh: what was typed before the prompt is not taken for it.
  changed_ = ::tcsetattr(fd_, echo_ ? TCSANOW : TCSAFLUSH, &asked) == 0;
}

terminal_question::~terminal_question() {
  if (changed_) ::tcsetattr(fd_, echo_ ? TCSANOW : TCSAFLUSH, &saved_);
}

}  // namespace arun::cli
