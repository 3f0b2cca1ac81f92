#pragma once
// Recipes built in code for engine tests with a fake runner: a recipe of steps, and a step
// fanned out over N items at once.

#include <arun/recipe.hpp>

#include <boost/json/array.hpp>

#include <utility>
#include <vector>

namespace arun::test {

/// A recipe named `t` of `steps`.
inline recipe make(std::vector<step> steps) {
  recipe r;
  r.name = "t";
  r.steps = std::move(steps);
  return r;
}

/// `s` once per item 0..items-1, all at once (`parallel: true`).
inline step fan_out(step s, int items) {
  foreach_spec f;
  boost::json::array list;
  for (int i = 0; i < items; ++i) list.emplace_back(i);
  f.items = std::move(list);
  f.max_concurrent = 0;
  s.foreach = std::move(f);
  return s;
}

}  // namespace arun::test
