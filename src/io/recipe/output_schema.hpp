#pragma once
// A step's `output_schema:` compiled: a JSON Schema (draft 7, as valijson 1.0 checks it),
// written inline or in a file next to the recipe. What could not be checked safely is refused
// when the recipe loads: references outside the document (another file, the network),
// references that loop without going into the value (they would never end), patterns
// std::regex does not accept.

#include <arun/recipe.hpp>

#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

class output_schema final : public json_schema_check {
public:
  /// Why a document is not compiled, and where in it (keys and indices; empty: the whole).
  struct refusal {
    std::string message;  ///< one sentence, naming the place as a $ref would (`#/properties/name`)
    std::vector<std::string> at;
  };

  /// Compiles `document`, a JSON Schema (a mapping, or true / false). `origin` is "inline" or
  /// the schema file's path as written.
  static std::variant<std::shared_ptr<const output_schema>, refusal> compile(boost::json::value document,
                                                                             std::string origin);

  output_schema(const output_schema&) = delete;
  output_schema& operator=(const output_schema&) = delete;
  ~output_schema() override;

  /// One problem per place in `value` that breaks the schema, in the words of Python's
  /// jsonschema with the place's JSONPath ("'id' is a required property at $.items[0]", "'x'
  /// is not of type 'integer' at $.n"; "$" is the value itself); empty when it conforms. Never throws: when the validator
  /// fails (std::regex gives up on a long text), that is the one violation.
  std::vector<std::string> violations(const boost::json::value& value) const override;
  const std::string& origin() const noexcept override { return origin_; }
  const boost::json::value& document() const noexcept override { return document_; }

private:
  struct compiled;
  /// violations() on the calling thread's stack.
  std::vector<std::string> check(const boost::json::value& value) const;
  output_schema(boost::json::value document, std::string origin, std::unique_ptr<compiled> c);

  boost::json::value document_;  // as written, for the prompt that asks an agent again
  std::string origin_;
  std::unique_ptr<compiled> compiled_;
};

/// The schema in a schema file's `text`: JSON, or else YAML (1.2 typing, as recipes) unless
/// `file_name` ends in `.json`. The error says what is wrong and where (line, column).
std::variant<boost::json::value, std::string> parse_schema_text(std::string_view text, std::string_view file_name);

}  // namespace arun::io
