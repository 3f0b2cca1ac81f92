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
  out.push_back(std::move(d));
}

}  // namespace

std::vector<diagnostic> unsupported_features(const recipe& r) {
  std::vector<diagnostic> out;
  // An extends chain the loader could not resolve would run without its parent's steps.
  if (!r.extends.empty()) refuse(out, r.extends_where, "'extends'", "extends");
  for (const auto& st : r.stages)
    if (st.approval.required) refuse(out, st.where, "stage approval (stage '" + st.name + "')", "approval");
  for_each_step(r, [&](const step& s, int) {
    const std::string of = " (step '" + s.id + "')";
    if (s.approval.required)
      refuse(out, s.at("requires_approval"), "approval gates" + of, "requires_approval",
             "approvals come with sessions; until then, split the recipe at the gate");
  });
  return out;
}

}  // namespace arun
