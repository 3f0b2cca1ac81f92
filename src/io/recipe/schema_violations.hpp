#pragma once
// What a JSON Schema validator (valijson) reports, as arun shows it: one violation per place
// in the value, the innermost ones, without the lines valijson adds on the way out of a
// nested failure. Shared by the recipe schema check and steps' `output_schema:`.

#include <string>
#include <utility>
#include <vector>

namespace arun::io {

/// One place the document breaks the schema: the path of keys and indices to the value
/// (empty: the document itself) and what the schema says about it.
struct schema_violation {
  std::vector<std::string> path;  ///< "steps", "0", "timeout"
  std::string message;
};

/// The path of keys and indices in a valijson error context ("<root>", then "[key]" or
/// "[index]" per level).
std::vector<std::string> path_of(const std::vector<std::string>& context);

/// One validator error: its path (path_of) and valijson's description.
using schema_error = std::pair<std::vector<std::string>, std::string>;

/// Which places collect_violations reports.
enum class violation_places {
  innermost,  ///< only the innermost: an error inside a value explains its enclosing ones
  every,      ///< every place with an error of its own (a missing property beside a wrong one)
};

/// The violations among `errors`, in their order, one per place: the lines valijson adds on
/// the way out of a nested failure are dropped, alternatives at one place (anyOf, oneOf) are
/// joined with "; or " (a few at most), descriptions become phrases (no capital, no final
/// period, 0 instead of valijson's 0.000000).
std::vector<schema_violation> collect_violations(const std::vector<schema_error>& errors, violation_places places);

/// valijson's description as a phrase: "Missing required property 'a'." is "missing required
/// property 'a'", "JSON value ..." keeps its capitals, numbers lose valijson's trailing zeros.
std::string violation_phrase(std::string description);

}  // namespace arun::io
