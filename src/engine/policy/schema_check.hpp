#pragma once
// `output_schema:`: a step's output parsed as JSON (as parse_json finds it) and checked
// against its schema; the errors an agent is shown when it is asked again.

#include <arun/recipe.hpp>

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

struct schema_verdict {
  std::optional<boost::json::value> value;  ///< the JSON found in the output, if any
  std::vector<std::string> problems;        ///< empty: it conforms
  bool conforms() const noexcept { return value && problems.empty(); }
};

/// The JSON in `output` (json_extract.hpp's rules) checked against `schema`.
schema_verdict check_output(const json_schema_check& schema, std::string_view output);

/// The text appended to an agent's prompt when its reply did not conform: the problems, its
/// reply (cut to a few KiB) and the schema, with the instruction to reply with JSON only.
std::string schema_correction(const json_schema_check& schema, const std::vector<std::string>& problems,
                              std::string_view reply);

/// A step's error when its output does not conform, after `calls` replies (1 for bash): the
/// first problem on its first line, the others a line each below.
std::string schema_failure(const json_schema_check& schema, const std::vector<std::string>& problems, int calls);

}  // namespace arun::engine
