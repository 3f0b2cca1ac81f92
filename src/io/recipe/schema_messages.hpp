#pragma once
// What an output_schema violation is, said as Python's jsonschema says it: the value, and
// what the schema allows ("'urgent' is not one of ['low', 'medium', 'high']"), where valijson
// names only the keyword ("Failed to match against any enum values"). The keyword is found
// again in the schema, along the value's path, and checked against the value
// (docs/reference/recipe.md, "output_schema").

#include <boost/json/value.hpp>

#include <map>
#include <string>
#include <vector>

namespace arun::io {

/// Says valijson's `description` of the value at `path` (keys and indices) in `instance` again:
/// "'x' is not of type 'integer'", "'name' is a required property", "3 is greater than the
/// maximum of 2", "[1, 2, 3] is too long (maxItems: 2)", "additional properties are not allowed
/// ('b' was unexpected)". `schema` is the compiled document (its `$ref`s are followed).
/// `seen` counts, per place and keyword, the errors said so far: the n-th enum error at a place
/// is the n-th enum there the value fails (anyOf alternatives). A description it does not know,
/// or whose keyword it cannot find, is returned unchanged; wrapper lines too. Never throws.
class violation_wording {
public:
  violation_wording(const boost::json::value& schema, const boost::json::value& instance)
      : schema_(schema), instance_(instance) {}

  std::string operator()(const std::vector<std::string>& path, const std::string& description);

private:
  const boost::json::value& schema_;
  const boost::json::value& instance_;
  std::map<std::string, std::size_t> seen_;  // place and keyword -> errors said there
};

/// The JSONPath of the value at `path` in `instance`: "$", "$.items[2].priority", "$['a b']".
std::string json_path(const boost::json::value& instance, const std::vector<std::string>& path);

/// A value as jsonschema shows one, cut to about `most` characters: 'text' (quotes, backslashes
/// and control characters escaped), 3, 2.5, true, null, [1, 2], {'a': 1}.
std::string shown_value(const boost::json::value& v, std::size_t most = 60);

}  // namespace arun::io
