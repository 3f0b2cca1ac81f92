#include "session/journal_spend.hpp"

#include <algorithm>
#include <string_view>

namespace arun::io {
namespace {

// Adds `call` to the total of its provider and model.
void add_to(std::vector<agent_usage>& totals, const agent_usage& call) {
  auto same = std::find_if(totals.begin(), totals.end(), [&](const agent_usage& u) {
    return u.provider == call.provider && u.model == call.model;
  });
  if (same == totals.end())
    totals.push_back(call);
  else
    same->add(call);
}

// Whether `inner` is an instance inside `outer` (`fan[2]/x` inside `fan[2]` and `fan`).
bool inside(std::string_view inner, std::string_view outer) {
  return inner.size() > outer.size() && inner.starts_with(outer) &&
         (inner[outer.size()] == '[' || inner[outer.size()] == '/');
}

std::uint64_t calls_of(const std::vector<agent_usage>& lines) {
  std::uint64_t n = 0;
  for (const auto& u : lines) n += u.calls;
  return n;
}

}  // namespace

void journal_spend::usage_line(const std::string& instance, const agent_usage& call) {
  any_ = true;
  with_lines_.insert(instance);
  pending_[instance].push_back(call);
}

void journal_spend::damaged_line(const std::string& instance, std::size_t line_number) {
  any_ = true;
  if (instance.empty()) {
    lost_.push_back(line_number);
    return;
  }
  with_lines_.insert(instance);
  damaged_[instance].push_back(line_number);
}

void journal_spend::record(const std::string& instance, const agent_usage* usage) {
  if (usage) any_ = true;
  std::vector<agent_usage> lines;
  if (auto it = pending_.find(instance); it != pending_.end()) {
    lines = std::move(it->second);
    pending_.erase(it);
  }
  std::vector<std::size_t> damaged;
  if (auto it = damaged_.find(instance); it != damaged_.end()) {
    damaged = std::move(it->second);
    damaged_.erase(it);
  }
  if (!damaged.empty()) {
    // The record sums the calls its run made, the damaged one included; the intact lines may
    // hold an earlier, interrupted run's calls too. The larger of the two is the nearer.
    if (usage && usage->calls >= calls_of(lines)) {
      add_to(counted_, *usage);
    } else {
      for (const auto& u : lines) add_to(counted_, u);
      lost_.insert(lost_.end(), damaged.begin(), damaged.end());
    }
    return;
  }
  if (!lines.empty()) {
    for (const auto& u : lines) add_to(counted_, u);
    return;
  }
  // No line stands for this record: an arun that wrote usage only into records. Counted at
  // the end, if no other record or line is inside it (a loop's record sums its items').
  if (usage) {
    auto [at, fresh] = record_only_.try_emplace(instance, *usage);
    if (!fresh) at->second.add(*usage);
  }
}

std::vector<agent_usage> journal_spend::total() const {
  auto out = counted_;
  for (const auto& [instance, lines] : pending_)  // calls whose instance has no record yet
    for (const auto& u : lines) add_to(out, u);
  for (const auto& [instance, usage] : record_only_) {
    const std::string_view outer = instance;
    const bool container =
        std::any_of(record_only_.begin(), record_only_.end(), [&](const auto& other) { return inside(other.first, outer); }) ||
        std::any_of(with_lines_.begin(), with_lines_.end(), [&](const std::string& other) { return inside(other, outer); });
    if (!container) add_to(out, usage);
  }
  return out;
}

std::vector<std::size_t> journal_spend::lost_lines() const {
  auto out = lost_;
  for (const auto& [instance, lines] : damaged_) out.insert(out.end(), lines.begin(), lines.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace arun::io
