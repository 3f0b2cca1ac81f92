#pragma once
// Renders run events as progress lines on stderr (stdout is kept for the final result).

#include <arun/events.hpp>

#include <cstdio>

namespace arun::io {

struct progress_options {
  bool show_output = true;  ///< echo each step's output lines, prefixed with the step id
};

class progress_printer final : public event_listener {
public:
  explicit progress_printer(std::FILE* out = stderr, progress_options options = {})
      : out_(out), options_(options) {}
  void on_event(const event& e) noexcept override;

private:
  std::FILE* out_;
  progress_options options_;
};

}  // namespace arun::io
