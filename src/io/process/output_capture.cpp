#include "process/output_capture.hpp"

#include "output/secret_masker.hpp"

#include <algorithm>
#include <utility>

namespace arun::io {

output_capture::output_capture(capture_limits limits, line_sink on_line)
    : limits_(limits), on_line_(std::move(on_line)) {}

void output_capture::append(std::string_view chunk) {
  total_bytes_ += chunk.size();
  // The head runs hold() bytes past the bound: take() cuts it where no secret straddles.
  const auto bound = limits_.max_bytes + hold();
  if (head_.size() < bound) {
    const auto take = std::min(bound - head_.size(), chunk.size());
    // Grow geometrically but never past the bound: a 10 MiB capture never holds 16 MiB.
    if (head_.size() + take > head_.capacity())
      head_.reserve(std::min(bound, std::max(2 * head_.capacity(), head_.size() + take)));
    head_.append(chunk.substr(0, take));
  }
  if (total_bytes_ > limits_.max_bytes) truncated_ = true;
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
std::size_t output_capture::hold() const noexcept { return limits_.secrets ? limits_.secrets->longest() : 0; }

void output_capture::keep_tail(std::string_view chunk) {
  const auto keep = limits_.tail_bytes + hold();
  if (chunk.size() >= keep) {
    tail_.assign(chunk.substr(chunk.size() - keep));
    return;
  }
  tail_.append(chunk);
  // Trim only when twice the bound is reached, so appends stay amortised O(1).
  if (tail_.size() > 2 * keep) tail_.erase(0, tail_.size() - keep);
}

void output_capture::split_lines(std::string_view chunk) {
  const auto bound = limits_.max_line_bytes + hold();
  while (!chunk.empty()) {
    const auto nl = chunk.find('\n');
    const auto piece = chunk.substr(0, nl);
    if (!discarding_) {
      const auto room = bound - std::min(bound, partial_.size());
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) {
        // Deliver the beginning now and drop the rest of this line: memory stays bounded.
        deliver_cut_line();
        discarding_ = true;
      }
    }
    if (nl == std::string_view::npos) return;
    if (!discarding_) {
      if (partial_.size() > limits_.max_line_bytes)
        deliver_cut_line();
      else
        on_line_(partial_, false);
    }
    partial_.clear();
    discarding_ = false;
    chunk.remove_prefix(nl + 1);
  }
}

// The line's beginning up to max_line_bytes, short of a secret that straddles the cut: masking
// the cut line afterwards could not recognise the secret's first part.
void output_capture::deliver_cut_line() {
  on_line_(cut_text(partial_, limits_.max_line_bytes, limits_.secrets), true);
  partial_.clear();
}

void output_capture::finish() {
  if (on_line_ && !discarding_ && !partial_.empty()) {
    if (partial_.size() > limits_.max_line_bytes)
      deliver_cut_line();
    else
      on_line_(partial_, false);
  }
  partial_.clear();
  discarding_ = false;
}

std::string_view cut_text(std::string_view text, std::size_t at, const secret_masker* secrets) noexcept {
  if (at >= text.size()) return text;
  return text.substr(0, secrets ? secrets->safe_cut(text, at) : at);
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
  if (tail.size() > limits_.tail_bytes) {
    const auto start = tail.size() - limits_.tail_bytes;
    tail.remove_prefix(limits_.secrets ? limits_.secrets->safe_start(tail, start) : start);
  }
  out.tail = std::string(last_lines(tail, limits_.tail_lines));
  if (head_.size() > limits_.max_bytes) head_.resize(cut_text(head_, limits_.max_bytes, limits_.secrets).size());
  out.text = std::exchange(head_, {});
  out.truncated = std::exchange(truncated_, false);
  out.total_bytes = std::exchange(total_bytes_, 0);
  tail_.clear();
  return out;
}

}  // namespace arun::io
