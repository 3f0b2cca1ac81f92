#pragma once
// -k/--keep-going (docs/running.md, "Keep going"): as `make -k`, a failure lets the rest of the
// run go on, but nothing that depends on the failed step runs on what it left behind. Within
// one list of steps (a recipe's steps and stages, or a loop's body), this remembers which
// steps failed so, or were held back because of one, and tells a later step whether it
// depends on any of them: by `depends_on`, or by reading one of their outputs.

#include <arun/recipe.hpp>

#include <functional>
#include <map>
#include <string>

namespace arun::engine {

class upstream_failures {
public:
  struct hold {
    std::string why;          ///< "not run: its dependency 'compile' failed"; empty: it may run
    std::string first_failed;  ///< the failed instance at the root of it
  };
  /// Whether `s` must not run because something it depends on failed.
  hold blocking(const step& s) const;
  /// `s` (as instance `instance`) failed under --keep-going.
  void failed(const step& s, const std::string& instance) { note(s, origin{instance, instance}); }
  /// `s` completed: a later step reading its outputs reads what it wrote, not a failed one's.
  void succeeded(const step& s);
  /// `s` was not run because of `h`: what depends on it is not run either.
  void held_back(const step& s, const std::string& instance, const hold& h) {
    note(s, origin{instance, h.first_failed});
  }

private:
  struct origin {
    std::string instance;      // the step that failed, or was held back
    std::string first_failed;  // the failed step at the root (itself when it failed)
  };
  void note(const step& s, origin o);
  static std::string describe(const origin& o);
  std::map<std::string, origin, std::less<>> by_step_;    // by step id (depends_on)
  std::map<std::string, origin, std::less<>> by_output_;  // by output, exit-code or collect name
};

}  // namespace arun::engine
