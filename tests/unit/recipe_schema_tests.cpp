// The recipe JSON Schema as arun checks it (recipe/recipe_schema.hpp): the compiled-in copy is
// the file editors use, violations are reported innermost first with their path, and what the
// reader treats differently from a strict schema (unknown keys, `key: null`) is not a violation.
#include <catch2/catch.hpp>

#include "recipe/recipe_schema.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>

#include <fstream>
#include <iterator>

using namespace arun;
using namespace arun::io;

TEST_CASE("recipe schema: the compiled-in text is schema/recipe.schema.json, with an $id") {
  std::ifstream in(std::string(ARUN_SOURCE_DIR) + "/schema/recipe.schema.json", std::ios::binary);
  const std::string file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  REQUIRE_FALSE(file.empty());
  CHECK(recipe_schema_text() == file);
  const auto schema = boost::json::parse(file);
  CHECK(schema.at("$id") == "urn:arun:schema:recipe:1");
  CHECK(schema.at("$schema") == "http://json-schema.org/draft-07/schema#");
}

TEST_CASE("recipe schema: a violation is reported where it is, not at every enclosing value") {
  CHECK(check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a","command":"echo"}]})")).empty());
  auto v = check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a","command":"echo","timeout":[1]}]})"));
  REQUIRE(v.size() == 1);
  CHECK(v[0].path == std::vector<std::string>{"steps", "0", "timeout"});
  CHECK(v[0].message == "value type not permitted by 'type' constraint");
  // A duration is a number of seconds or a text such as 5m or 1h30m.
  CHECK(check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a","command":"echo","timeout":"1h30m"}]})")).empty());
  v = check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a","command":"echo","timeout":"soon"}]})"));
  REQUIRE(v.size() == 1);
  CHECK(v[0].message == "failed to match regex specified by 'pattern' constraint");
  // Alternatives each say why they failed.
  v = check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a"}]})"));
  REQUIRE(v.size() == 1);
  CHECK(v[0].path == std::vector<std::string>{"steps", "0"});
  CHECK_THAT(v[0].message, Catch::StartsWith("missing required property 'command'; or missing required property 'prompt'"));
  v = check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a","command":"echo","on_error":"sometimes"}]})"));
  REQUIRE(v.size() == 1);
  CHECK(v[0].message == "failed to match against any enum values");
  // Unknown keys are the reader's to judge (a warning with a suggestion), not a violation.
  CHECK(check_recipe_schema(boost::json::parse(R"({"name":"x","steps":[{"id":"a","command":"echo","colour":"red"}]})")).empty());
}

TEST_CASE("recipe schema: diagnostics point at the value in the YAML text, and key: null is an absent key") {
  auto ds = schema_diagnostics("name: x\nsteps:\n  - id: a\n    command: echo\n    timeout: [1]\n", "r.yaml");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].where.file == "r.yaml");
  CHECK(ds[0].where.line == 5);
  CHECK(ds[0].where.column == 14);
  CHECK(ds[0].code == "schema");
  CHECK(ds[0].key == "timeout");
  CHECK(ds[0].message == "the recipe schema refuses steps[0].timeout: value type not permitted by 'type' constraint");
  CHECK_THAT(ds[0].hint, Catch::Contains("arun itself accepts this"));
  // A bash step with `prompt: null` has no prompt, for the reader and so for the check.
  CHECK(schema_diagnostics("name: x\nsteps:\n  - id: a\n    command: echo\n    prompt:\n", "r.yaml").empty());
  // Text that is not YAML is the loader's to report.
  CHECK(schema_diagnostics("name: [x\n", "r.yaml").empty());
}
