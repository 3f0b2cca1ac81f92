#include "process/output_capture.hpp"

#include <algorithm>
#include <utility>

namespace arun::io {

output_capture::output_capture(capture_limits limits, line_sink on_line)
    : limits_(limits), on_line_(std::move(on_line)) {}

void output_capture::append(std::string_view chunk) {
  total_bytes_ += chunk.size();
  if (head_.size() < limits_.max_bytes) {
    const auto room = limits_.max_bytes - head_.size();
    const auto take = std::min(room, chunk.size());
    // Grow geometrically but never past the bound: a 10 MiB capture never holds 16 MiB.
    if (head_.size() + take > head_.capacity())
      head_.reserve(std::min(limits_.max_bytes, std::max(2 * head_.capacity(), head_.size() + take)));
    head_.append(chunk.substr(0, take));
    if (chunk.size() > room) truncated_ = true;
  } else if (!chunk.empty()) {
    truncated_ = true;
  }
  keep_tail(chunk);
  if (on_line_) split_lines(chunk);
}

void output_capture::skip(std::uint64_t bytes) {
  if (bytes == 0) return;
  total_bytes_ += bytes;
  truncated_ = true;
  tail_.clear();
  partial_.clear();
  discarding_ = true;  // up to the next newline: the end of a line whose start was never read
}

void output_capture::keep_tail(std::string_view chunk) {
  const auto keep = limits_.tail_bytes;
  if (chunk.size() >= keep) {
    tail_.assign(chunk.substr(chunk.size() - keep));
    return;
  }
  tail_.append(chunk);
  // Trim only when twice the bound is reached, so appends stay amortised O(1).
  if (tail_.size() > 2 * keep) tail_.erase(0, tail_.size() - keep);
}

void output_capture::split_lines(std::string_view chunk) {
  while (!chunk.empty()) {
    const auto nl = chunk.find('\n');
    const auto piece = chunk.substr(0, nl);
    if (!discarding_) {
      const auto room = limits_.max_line_bytes - partial_.size();
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) {
        // Deliver the beginning now and drop the rest of this line: memory stays bounded.
        on_line_(partial_, true);
        partial_.clear();
        discarding_ = true;
      }
    }
    if (nl == std::string_view::npos) return;
    if (!discarding_) on_line_(partial_, false);
    partial_.clear();
    discarding_ = false;
    chunk.remove_prefix(nl + 1);
  }
}

void output_capture::finish() {
  if (on_line_ && !discarding_ && !partial_.empty()) on_line_(partial_, false);
  partial_.clear();
  discarding_ = false;
}

std::string_view last_lines(std::string_view text, std::size_t max_lines) noexcept {
  if (max_lines == 0) return {};
  auto end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  std::size_t pos = end;
  for (std::size_t lines = 0; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
  }
  return text.substr(pos);
}

captured_output output_capture::take() {
  captured_output out;
  std::string_view tail = tail_;
  if (tail.size() > limits_.tail_bytes) tail.remove_prefix(tail.size() - limits_.tail_bytes);
  out.tail = std::string(last_lines(tail, limits_.tail_lines));
  out.text = std::exchange(head_, {});
  out.truncated = std::exchange(truncated_, false);
  out.total_bytes = std::exchange(total_bytes_, 0);
  tail_.clear();
  return out;
}

}  // namespace arun::io
