#include "scheduler/upstream_failures.hpp"

#include "dag_order.hpp"

namespace arun::engine {

std::string upstream_failures::describe(const origin& o) {
  if (o.first_failed == o.instance) return "'" + o.instance + "' failed";
  return "'" + o.instance + "' was not run ('" + o.first_failed + "' failed)";
}

upstream_failures::hold upstream_failures::reading(const std::set<std::string, std::less<>>& names) const {
  for (const auto* list = this; list; list = list->outer_) {
    if (list->by_output_.empty()) continue;
    for (const auto& name : names)
      if (auto it = list->by_output_.find(name); it != list->by_output_.end())
        return {"not run: it reads '" + name + "', and " + describe(it->second), it->second.first_failed};
  }
  return {};
}

upstream_failures::hold upstream_failures::blocking(const step& s) const {
  for (const auto& d : s.depends_on)
    if (auto it = by_step_.find(d); it != by_step_.end())
      return {"not run: its dependency " + describe(it->second), it->second.first_failed};
  for (const auto* list = this; list; list = list->outer_)
    if (!list->by_output_.empty()) return reading(names_needed(s));
  return {};
}

upstream_failures::hold upstream_failures::blocking_condition(std::string_view condition) const {
  if (condition.empty()) return {};
  return reading(names_in_condition(condition));
}

void upstream_failures::failed(const step& s, const std::string& instance,
                               const std::set<std::string, std::less<>>& unwritten) {
  note(s, origin{instance, instance}, unwritten);
}

void upstream_failures::held_back(const step& s, const std::string& instance, const hold& h) {
  note(s, origin{instance, h.first_failed}, {});
}

void upstream_failures::succeeded(const step& s) {
  if (by_output_.empty()) return;
  for (const auto& name : names_written(s)) by_output_.erase(name);
}

void upstream_failures::note(const step& s, const origin& o, const std::set<std::string, std::less<>>& unwritten) {
  for (const auto& name : names_written(s)) by_output_.insert_or_assign(name, o);
  for (const auto& name : unwritten) by_output_.insert_or_assign(name, o);
  by_step_.insert_or_assign(s.id, o);
}

}  // namespace arun::engine
