#pragma once
// An event listener that keeps what engine tests look at: kind, instance, attempt, delay,
// final status and message of every event.

#include <arun/events.hpp>
#include <arun/results.hpp>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <string>
#include <vector>

namespace arun::test {

struct recorder final : event_listener {
  struct seen {
    event_kind kind;
    std::string step;
    int attempt;
    std::chrono::nanoseconds delay;
    std::string status;
    std::string message;
    event::group_state group;  ///< step_start of a child in a limit group; limit_changed
    bool cached = false;       ///< step_end: the output came from the cache
    int attempts = 0;          ///< step_end: the result's attempts
  };
  std::vector<seen> events;
  void on_event(const event& e) noexcept override {
    events.push_back({e.kind, e.step, e.attempt, e.delay, e.result ? std::string(to_string(e.result->status)) : "",
                      e.message, e.group, e.result && e.result->cached, e.result ? e.result->attempts : 0});
  }
  std::vector<seen> of(event_kind k) const {
    std::vector<seen> out;
    std::copy_if(events.begin(), events.end(), std::back_inserter(out), [k](const seen& s) { return s.kind == k; });
    return out;
  }
};

}  // namespace arun::test
