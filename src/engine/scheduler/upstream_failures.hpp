#pragma once
// -k/--keep-going (docs/running.md, "Keep going"): as `make -k`, a failure lets the rest of the
// run go on, but nothing that depends on the failed step runs on what it left behind. Within
// one list of steps (a recipe's steps and stages, or a loop body's iteration), this remembers
// which steps failed so, or were held back because of one, and tells a later step whether it
// depends on any of them: by `depends_on`, or by reading an output one of them did not write.
// A loop body or sub-recipe run inside the list sees the list's failures too (`outer`).

#include <arun/recipe.hpp>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace arun::engine {

class upstream_failures {
public:
  explicit upstream_failures(const upstream_failures* outer = nullptr) : outer_(outer) {}

  struct hold {
    std::string why;           ///< "not run: its dependency 'compile' failed"; empty: it may run
    std::string first_failed;  ///< the failed instance at the root of it
  };
  /// Whether `s` must not run because something it depends on failed.
  hold blocking(const step& s) const;
  /// Whether a stage whose condition is `condition` must not run: it reads a failed output.
  hold blocking_condition(std::string_view condition) const;
  /// `s` (as instance `instance`) failed under --keep-going; `unwritten`: names it would have
  /// written besides its own outputs (a sub-recipe's).
  void failed(const step& s, const std::string& instance, const std::set<std::string, std::less<>>& unwritten = {});
  /// `s` completed: a later step reading its outputs reads what it wrote, not a failed one's.
  void succeeded(const step& s);
  /// `s` was not run because of `h`: what depends on it is not run either.
  void held_back(const step& s, const std::string& instance, const hold& h);

private:
  struct origin {
    std::string instance;      // the step that failed, or was held back
    std::string first_failed;  // the failed step at the root (itself when it failed)
  };
  void note(const step& s, const origin& o, const std::set<std::string, std::less<>>& unwritten);
  hold reading(const std::set<std::string, std::less<>>& names) const;
  static std::string describe(const origin& o);
  const upstream_failures* outer_;
  std::map<std::string, origin, std::less<>> by_step_;    // by step id (depends_on): this list only
  std::map<std::string, origin, std::less<>> by_output_;  // by a name it did not write
};

}  // namespace arun::engine
