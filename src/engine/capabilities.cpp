// What this version of the engine runs. Recipes that use anything else are refused before
// they start, so a recipe never runs differently from what it says.
#include <arun/validation.hpp>

namespace arun {
namespace {

void refuse(std::vector<diagnostic>& out, const source_location& where, const std::string& what, std::string key,
            std::string hint = {}) {
  diagnostic d;
  d.where = where;
  d.message = what + " is not supported by this version of arun yet";
  d.key = std::move(key);
  d.hint = std::move(hint);
  d.code = "unsupported";
  out.push_back(std::move(d));
}

}  // namespace

std::vector<diagnostic> unsupported_features(const recipe& r) {
  std::vector<diagnostic> out;
  // An extends chain the loader could not resolve would run without its parent's steps.
  if (!r.extends.empty()) refuse(out, r.extends_where, "'extends'", "extends");
  return out;
}

}  // namespace arun
