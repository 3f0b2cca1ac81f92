#include "output/progress_loops.hpp"

#include <algorithm>
#include <vector>

namespace arun::io::detail {

bool inside_iteration(std::string_view id) noexcept { return id.find('[') != std::string_view::npos; }

std::optional<std::string_view> enclosing_loop(std::string_view id) noexcept {
  const auto open = id.rfind('[');
  if (open == std::string_view::npos) return std::nullopt;
  return id.substr(0, open);
}

bool is_iteration(std::string_view id) noexcept {
  const auto open = id.rfind('[');
  if (open == std::string_view::npos || open == 0 || id.back() != ']') return false;
  const auto digits = id.substr(open + 1, id.size() - open - 2);
  return !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string without_indices(std::string_view id) {
  std::string out;
  out.reserve(id.size());
  bool in_index = false;
  for (const char c : id) {
    if (in_index && c != ']') continue;
    in_index = c == '[';
    out += c;
  }
  return out;
}

loop_progress& loop_tracker::start_loop(std::string_view id, std::optional<std::size_t> items) {
  loop_progress fresh;
  fresh.id = std::string(id);
  fresh.items = items;
  fresh.order = next_order_++;
  auto& slot = loops_[fresh.id];
  slot = std::move(fresh);
  return slot;
}

std::optional<loop_progress> loop_tracker::end_loop(std::string_view id) {
  const auto it = loops_.find(id);
  if (it == loops_.end()) return std::nullopt;
  auto done = std::move(it->second);
  loops_.erase(it);
  return done;
}

loop_progress* loop_tracker::find(std::string_view id) {
  const auto it = loops_.find(id);
  return it == loops_.end() ? nullptr : &it->second;
}

loop_progress* loop_tracker::start_iteration(std::string_view id) {
  if (!is_iteration(id)) return nullptr;
  const auto loop_id = *enclosing_loop(id);
  auto* loop = find(loop_id);
  // A loop whose own start event we did not see (a step type the printer does not know as a
  // loop) is still tracked, from its iterations.
  if (loop == nullptr) loop = &start_loop(loop_id, std::nullopt);
  loop->running.emplace(id);
  return loop;
}

loop_progress* loop_tracker::end_iteration(std::string_view id, step_status status, bool cached) {
  if (!is_iteration(id)) return nullptr;
  auto* loop = find(*enclosing_loop(id));
  if (loop == nullptr) return nullptr;
  if (const auto it = loop->running.find(id); it != loop->running.end()) loop->running.erase(it);
  ++loop->done;
  if (status == step_status::failed) ++loop->failed;
  if (status == step_status::cancelled) ++loop->cancelled;
  if (cached) ++loop->cached;
  return loop;
}

loop_tracker::followed loop_tracker::follow(const event& e) {
  followed f;
  switch (e.kind) {
    case event_kind::step_start:
      // Iteration first: an iteration holding body steps may be reported with type "loop" too.
      if (is_iteration(e.step))
        start_iteration(e.step);
      else if (e.step_type == "loop" || e.items)
        start_loop(e.step, e.items);
      break;
    case event_kind::step_retry:
      if (inside_iteration(e.step)) retry(e.step);
      break;
    case event_kind::step_end:
      if (e.result == nullptr) break;
      if (is_iteration(e.step)) {
        f.iteration_of = end_iteration(e.step, e.result->status, e.result->cached);
      } else {
        f.loop_ended = end_loop(e.step).has_value();
      }
      break;
    default: break;
  }
  return f;
}

loop_progress* loop_tracker::retry(std::string_view id) {
  const auto loop_id = enclosing_loop(id);
  if (!loop_id) return nullptr;
  auto* loop = find(*loop_id);
  if (loop != nullptr) ++loop->retries;
  return loop;
}

std::vector<const loop_progress*> loop_tracker::in_start_order() const {
  std::vector<const loop_progress*> order;
  order.reserve(loops_.size());
  for (const auto& kv : loops_) order.push_back(&kv.second);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->order < b->order; });
  return order;
}

}  // namespace arun::io::detail
