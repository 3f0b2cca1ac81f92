#pragma once
// One listener that forwards every event to several (progress on stderr, `--events`, audit).

#include <arun/events.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace arun::io {

/// Forwards each event, in order, to the listeners added, which it does not own: they must
/// outlive the fanout. Null pointers are ignored. Listeners never throw (event_listener's
/// contract), so one failing sink cannot starve the others.
class listener_fanout final : public event_listener {
public:
  listener_fanout() = default;
  explicit listener_fanout(std::vector<event_listener*> listeners) {
    for (auto* l : listeners) add(l);
  }

  /// Appends `l` (after the listeners already added); null is ignored.
  void add(event_listener* l) {
    if (l != nullptr) listeners_.push_back(l);
  }

  std::size_t size() const noexcept { return listeners_.size(); }
  bool empty() const noexcept { return listeners_.empty(); }

  void on_event(const event& e) noexcept override {
    for (auto* l : listeners_) l->on_event(e);
  }

private:
  std::vector<event_listener*> listeners_;
};

}  // namespace arun::io
