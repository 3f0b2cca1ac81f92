#include "output/status_board.hpp"

#include "output/value_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace arun::io {
namespace {

constexpr std::string_view red = "\x1b[31m", reset = "\x1b[0m";
constexpr std::size_t names_shown = 3;   // top-level steps named; the rest are counted
constexpr std::size_t min_name_room = 8; // columns worth giving to names at all
constexpr std::size_t recent_durations = 200;  // the typical duration is the median of the last ones

bool top_level(std::string_view id) { return id.find_first_of("/[") == std::string_view::npos; }
bool child_type(std::string_view type) { return type == "bash" || type == "agent"; }

// The first `columns` columns of `text`, with `…` as the last one when it was cut.
std::string shortened(std::string_view text, std::size_t columns) {
  if (display_columns(text) <= columns) return std::string(text);
  if (columns == 0) return {};
  return std::string(first_columns(text, columns - 1)) + "…";
}

// `31s`, `2m05s`, `1h02m`: the age of a running step.
std::string age(std::chrono::nanoseconds d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
}

// One counter of the line, verbose and terse.
struct part {
  std::string verbose, terse;
  bool alarm = false;  // red when colour is on
};

// `glued`: the first part (the `[3/7]` counter) goes with a space, not a separator.
std::string join(const std::vector<part>& parts, int level, bool color, bool glued) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += level >= 2 || (i == 1 && glued) ? " " : " · ";
    const auto& text = level >= 1 ? parts[i].terse : parts[i].verbose;
    if (color && parts[i].alarm)
      out += fmt::format("{}{}{}", red, text, reset);
    else
      out += text;
  }
  return out;
}

}  // namespace

std::optional<std::chrono::nanoseconds> loop_time_left(std::size_t items, std::size_t done, std::size_t kept,
                                                       std::chrono::nanoseconds spent) {
  const std::size_t ran = done - std::min(kept, done);  // ended after running in this run
  if (done >= items || ran == 0) return std::nullopt;
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(spent * static_cast<double>(items - done) /
                                                                          static_cast<double>(ran));
  // `ETA 0:00` would say the work is done: a second is the least that is left.
  return std::max<std::chrono::nanoseconds>(left, std::chrono::seconds(1));
}

bool outlived(std::chrono::nanoseconds age, std::optional<std::chrono::nanoseconds> typical) {
  using namespace std::chrono_literals;
  if (!typical) return age >= 10s;
  return age > 2 * *typical && age >= 5s;
}

std::vector<std::string> spend_texts(const event::spend_state& spend) {
  std::vector<std::string> texts;
  if (spend.cost_known || spend.budget_usd)
    texts.push_back(format_usd(spend.cost_usd) + (spend.budget_usd ? "/" + format_usd(*spend.budget_usd) : ""));
  auto tokens = [](std::uint64_t n) {
    return n >= 10'000'000 ? fmt::format("{}M", n / 1'000'000) : n >= 10'000 ? fmt::format("{}k", n / 1'000) : fmt::format("{}", n);
  };
  if (spend.tokens > 0 || spend.budget_tokens)
    texts.push_back(tokens(spend.tokens) + (spend.budget_tokens ? "/" + tokens(*spend.budget_tokens) : "") + " tok");
  return texts;
}

std::string clock_duration(std::chrono::nanoseconds d) {
  const auto s = std::max<long long>(0, std::chrono::duration_cast<std::chrono::seconds>(d).count());
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

void status_board::on_event(const event& e, clock::time_point now) {
  if (e.spend) spend_ = e.spend;  // after every call (a retry, a correction round): not only at step ends
  switch (e.kind) {
    case event_kind::recipe_start:
      if (depth_++ == 0) {
        *this = status_board{};
        depth_ = 1;
        started_ = now;
        top_total_ = e.items;
      }
      return;
    case event_kind::recipe_end:
      if (depth_ > 0 && --depth_ == 0) started_.reset();
      return;
    case event_kind::step_start:
      if (child_type(e.step_type)) children_running_.insert_or_assign(e.step, now);
      if (detail::is_iteration(e.step)) iterations_running_.insert(e.step);
      if (!e.group.name.empty() && group_of_.emplace(e.step, e.group.name).second) {
        auto& g = groups_[e.group.name];
        ++g.running;
        g.limit = e.group.limit;
      }
      if (e.step_type == "loop" || e.items) loop_started_.try_emplace(e.step, now);
      if (top_level(e.step) && e.step_type != "hook") {
        top_seen_.insert(e.step);
        if (e.step_type != "loop" && !e.items) top_running_.try_emplace(e.step, now);
      }
      return;
    case event_kind::step_retry:
      if (const auto it = children_running_.find(e.step); it != children_running_.end()) children_running_.erase(it);
      child_ended(e.step);
      return;
    case event_kind::limit_changed:
      groups_[e.group.name].limit = e.group.limit;
      return;
    case event_kind::step_end: {
      if (e.step_type == "hook") return;
      if (const auto it = children_running_.find(e.step); it != children_running_.end()) {
        add_duration(e.step, now - it->second);
        children_running_.erase(it);
      }
      // An iteration that ends without starting took none of this run's time: taken from the
      // journal (a resume), the cache, or never run (refused by the budget, stopped). Only the
      // first are "kept from earlier runs": what a journal keeps, not a cache hit.
      if (detail::is_iteration(e.step) && iterations_running_.erase(e.step) == 0)
        if (const auto loop = detail::enclosing_loop(e.step)) {
          ++instant_[std::string(*loop)];
          const auto st = e.result ? e.result->status : step_status::not_run;
          if (e.result && !e.result->cached &&
              (st == step_status::completed || st == step_status::skipped || st == step_status::degraded ||
               st == step_status::failed))
            ++kept_;
        }
      child_ended(e.step);
      if (const auto it = loop_started_.find(e.step); it != loop_started_.end()) loop_started_.erase(it);
      if (top_level(e.step)) {
        top_seen_.insert(e.step);
        if (const auto it = top_running_.find(e.step); it != top_running_.end()) top_running_.erase(it);
      }
      const bool counted = child_type(e.step_type) || e.step_type == "gate";
      if (counted && e.result && e.result->status == step_status::failed) ++failed_;
      return;
    }
    default: return;
  }
}

std::string step_shape(std::string_view instance) {
  std::string shape;
  shape.reserve(instance.size());
  bool in_index = false;
  for (const char c : instance) {
    if (in_index && c != ']') continue;
    in_index = c == '[';
    shape += c;
  }
  return shape;
}

void status_board::add_duration(std::string_view instance, std::chrono::nanoseconds d) {
  ++finished_;
  if (top_level(instance)) return;  // never named as outliving the rest: the step line shows it
  auto& r = recent_[step_shape(instance)];
  if (r.last.size() < recent_durations)
    r.last.push_back(d);
  else
    r.last[r.next] = d;
  r.next = (r.next + 1) % recent_durations;
}

std::optional<std::chrono::nanoseconds> status_board::typical_duration(std::string_view instance) const {
  const auto it = recent_.find(step_shape(instance));
  if (it == recent_.end() || it->second.last.empty()) return std::nullopt;
  auto sorted = it->second.last;
  const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), middle, sorted.end());
  return *middle;
}

std::vector<std::pair<std::string, std::chrono::nanoseconds>> status_board::outliving(clock::time_point now,
                                                                                      std::size_t most) const {
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> found;
  std::map<std::string, std::optional<std::chrono::nanoseconds>, std::less<>> typical;  // by shape, once a render
  for (const auto& [id, since] : children_running_) {
    if (top_level(id) || notes_.contains(id)) continue;
    auto [at, fresh] = typical.try_emplace(step_shape(id));
    if (fresh) at->second = typical_duration(id);
    if (outlived(now - since, at->second)) found.emplace_back(id, now - since);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (found.size() > most) found.resize(most);
  return found;
}

status_board::counts status_board::instance_counts() const {
  counts c{children_running_.size(), finished_, failed_, 0};
  c.kept = kept_;
  return c;
}

void status_board::child_ended(const std::string& instance) {
  const auto it = group_of_.find(instance);
  if (it == group_of_.end()) return;
  if (auto g = groups_.find(it->second); g != groups_.end() && g->second.running > 0) --g->second.running;
  group_of_.erase(it);
}

std::string status_board::render(const detail::loop_tracker& loops, std::size_t columns, clock::time_point now,
                                 bool color) const {
  if (!started_ || columns == 0) return {};
  std::vector<part> parts;
  const bool counter = top_total_ && *top_total_ > 0;
  if (counter) {
    const auto position = fmt::format("[{}/{}]", std::min(top_seen_.size(), *top_total_), *top_total_);
    parts.push_back({position, position});
  }
  // Each outermost running loop's counts (a nested loop is part of its outer one's count).
  std::optional<std::chrono::nanoseconds> remaining;
  for (const auto* loop : loops.in_start_order()) {
    if (loop->nested()) continue;
    if (loop->items) {
      parts.push_back({fmt::format("{} {}/{}", loop->id, loop->done, *loop->items), fmt::format("{}/{}", loop->done, *loop->items)});
      const auto since = loop_started_.find(loop->id);
      const auto kept = instant_.find(loop->id);
      if (!remaining && since != loop_started_.end())
        remaining = loop_time_left(*loop->items, loop->done, kept == instant_.end() ? 0 : kept->second, now - since->second);
    } else {
      parts.push_back({fmt::format("{} #{}", loop->id, loop->done), fmt::format("#{}", loop->done)});
    }
  }
  parts.push_back({fmt::format("{} running", children_running_.size()), fmt::format("{} run", children_running_.size())});
  // Each provider under a limit: `claude 3/4`.
  for (const auto& [name, g] : groups_)
    if (g.limit > 0) {
      const auto text = fmt::format("{} {}/{}", name, g.running, g.limit);
      parts.push_back({text, text});
    }
  if (failed_ > 0) parts.push_back({fmt::format("{} failed", failed_), fmt::format("{} fail", failed_), true});
  // What the agents spent so far: `$0.0041/$0.0100 · 118k tok`.
  if (spend_)
    for (const auto& text : spend_texts(*spend_)) parts.push_back({text, text});
  const auto elapsed = clock_duration(now - *started_);
  parts.push_back({elapsed, elapsed});
  const auto stragglers = outliving(now);
  // An estimate shorter than what an instance still running has taken already is no estimate.
  if (remaining && !stragglers.empty() && *remaining < stragglers.front().second)
    parts.push_back({"ETA ?", "~?"});
  else if (remaining)
    parts.push_back({"ETA " + clock_duration(*remaining), "~" + clock_duration(*remaining)});

  // The top-level steps running, oldest first, with their age.
  std::vector<std::pair<clock::time_point, std::string_view>> running;
  for (const auto& [id, since] : top_running_) running.emplace_back(since, id);
  std::sort(running.begin(), running.end());
  // Jobs waiting in a cluster's queue first (held, requeued): they need a look.
  std::vector<std::string> shown;
  for (const auto& [id, note] : notes_) shown.push_back(id + " " + note);
  // Then the instances that outlived the rest: what the run waits for.
  for (const auto& [id, running_for] : stragglers) shown.push_back(fmt::format("{} {}", id, age(running_for)));
  for (const auto& [since, id] : running)
    if (!notes_.contains(id)) shown.push_back(fmt::format("{} {}", id, age(now - since)));
  std::string names;
  for (std::size_t i = 0; i < shown.size() && i < names_shown; ++i) names += (i ? ", " : "") + shown[i];
  if (shown.size() > names_shown) names += fmt::format(" +{}", shown.size() - names_shown);

  // The most verbose counters that fit; then the names in the room left.
  for (int level = 0; level <= 2; ++level) {
    const auto core = join(parts, level, false, counter);
    const auto width = display_columns(core);
    if (width > columns) continue;
    std::string line = join(parts, level, color, counter);
    const std::size_t separator = level >= 2 ? 1 : 3;
    if (!names.empty() && width + separator + min_name_room <= columns)
      line += (level >= 2 ? " " : " · ") + shortened(names, columns - width - separator);
    return line;
  }
  return shortened(join(parts, 2, false, counter), columns);  // narrower than the terse counters
}

}  // namespace arun::io
