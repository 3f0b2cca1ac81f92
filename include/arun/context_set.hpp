#pragma once
/// `--set KEY=VALUE` (docs/running.md, "Options").

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

struct set_assignment {
  std::vector<std::string> path;  ///< `a.b` -> {"a", "b"}
  boost::json::value value;
};

/// Parses `KEY=VALUE`: the value is typed as JSON when it parses as an object, array,
/// number, true, false or null, else it is the string itself. Returns nullopt and sets
/// `error` for text without `=` or with an empty key segment.
std::optional<set_assignment> parse_set(std::string_view text, std::string& error);

/// Sets the value, creating (or replacing non-object) intermediate objects: `a.b=1` sets key
/// `b` of object `a`.
void apply_set(boost::json::object& context, const set_assignment& a);

}  // namespace arun
