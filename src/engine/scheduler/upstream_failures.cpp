#include "scheduler/upstream_failures.hpp"

#include "dag_order.hpp"

namespace arun::engine {

std::string upstream_failures::describe(const origin& o) {
  if (o.first_failed == o.instance) return "'" + o.instance + "' failed";
  return "'" + o.instance + "' was not run ('" + o.first_failed + "' failed)";
}

upstream_failures::hold upstream_failures::blocking(const step& s) const {
  if (by_step_.empty()) return {};
  for (const auto& d : s.depends_on)
    if (auto it = by_step_.find(d); it != by_step_.end())
      return {"not run: its dependency " + describe(it->second), it->second.first_failed};
  if (by_output_.empty()) return {};
  for (const auto& name : names_read(s))
    if (auto it = by_output_.find(name); it != by_output_.end())
      return {"not run: it reads '" + name + "', and " + describe(it->second), it->second.first_failed};
  return {};
}

namespace {

template <class F>
void for_each_output(const step& s, F&& f) {
  for (const auto* name : {&s.output, &s.output_exit_code})
    if (*name) f(**name);
  if (s.foreach && s.foreach->collect) f(*s.foreach->collect);
}

}  // namespace

void upstream_failures::succeeded(const step& s) {
  if (!by_output_.empty()) for_each_output(s, [&](const std::string& name) { by_output_.erase(name); });
}

void upstream_failures::note(const step& s, origin o) {
  for_each_output(s, [&](const std::string& name) { by_output_.insert_or_assign(name, o); });
  by_step_.insert_or_assign(s.id, std::move(o));
}

}  // namespace arun::engine
