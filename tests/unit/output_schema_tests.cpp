// The fields of runs of many agents as the loader reads them: `output_schema` (compiled with
// valijson, inline or from a file next to the recipe; what could not be checked safely is
// refused with its position), `schema_retries`, `limit_group`, and the recipe's `limits` and
// `budget`, `extends` included.
#include <catch2/catch.hpp>

#include "recipe/output_schema.hpp"
#include "recipe/recipe_chain.hpp"
#include "recipe/recipe_loader.hpp"
#include "temp_dir.hpp"

#include <arun/validation.hpp>

#include <boost/json/parse.hpp>

#include <map>
#include <string>
#include <variant>
#include <vector>

using arun::io::load_recipe_text;
using arun::io::output_schema;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::vector<std::string> check(const std::string& text, const std::string& file = "r.yaml",
                               arun::io::recipe_sources* sources = nullptr) {
  arun::io::load_limits limits;
  limits.sources = sources;
  auto r = load_recipe_text(text, file, limits);
  auto ds = std::move(r.diagnostics);
  if (r.value) {
    auto more = arun::validate_recipe(*r.value);
    ds.insert(ds.end(), more.begin(), more.end());
  }
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(format_diagnostic(d));
  return out;
}

std::string first_of(const std::vector<std::string>& ds, const std::string& level) {
  for (const auto& d : ds)
    if (d.find(": " + level + ": ") != std::string::npos) return d;
  return "<no " + level + ">";
}

std::string first_error(const std::string& text, const std::string& file = "r.yaml") {
  return first_of(check(text, file), "error");
}
std::string first_warning(const std::string& text) { return first_of(check(text), "warning"); }

arun::recipe loaded(const std::string& text, const std::string& file = "r.yaml",
                    arun::io::recipe_sources* sources = nullptr) {
  arun::io::load_limits limits;
  limits.sources = sources;
  auto r = load_recipe_text(text, file, limits);
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format_diagnostic(d));
  REQUIRE(r.value);
  return std::move(*r.value);
}

const std::string head = "name: x\nsteps:\n";

// An agent step 'a' with `lines` (each indented by 4) after its prompt: line N of `lines` is
// line 4 + N of the file.
std::string agent_with(const std::string& lines) { return head + "  - id: a\n    prompt: p\n" + lines; }

std::shared_ptr<const output_schema> compiled(const std::string& json) {
  auto c = output_schema::compile(boost::json::parse(json), "inline");
  if (auto* why = std::get_if<output_schema::refusal>(&c)) FAIL(why->message);
  return std::get<std::shared_ptr<const output_schema>>(c);
}

std::string refusal(const std::string& json) {
  auto c = output_schema::compile(boost::json::parse(json), "inline");
  if (auto* why = std::get_if<output_schema::refusal>(&c)) return why->message;
  return "<compiled>";
}

std::vector<std::string> violations(const std::string& schema, const std::string& value) {
  return compiled(schema)->violations(boost::json::parse(value));
}

struct copies final : arun::io::recipe_sources {
  std::map<std::string, std::string> saved_texts, read_texts;
  std::optional<std::string> saved(const std::string& path) override {
    if (auto it = saved_texts.find(path); it != saved_texts.end()) return it->second;
    return std::nullopt;
  }
  void read(const std::string& path, std::string_view text) override { read_texts[path] = std::string(text); }
};

const std::string person = R"({"type":"object","required":["items"],"properties":{"items":{"type":"array",
  "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}}}}}})";

}  // namespace

TEST_CASE("output_schema: a compiled schema names where in the value each violation is") {
  CHECK(violations(person, R"({"items":[{"name":"ada","age":36}]})").empty());
  CHECK(violations(person, R"({"items":[{"name":5},{"age":-1}]})") ==
        std::vector<std::string>{"5 is not of type 'string' at $.items[0].name",
                                 "-1 is less than the minimum of 0 at $.items[1].age",
                                 "'name' is a required property at $.items[1]"});
  CHECK(violations(person, "[1]") == std::vector<std::string>{"[1] is not of type 'object' at $"});
  CHECK(violations(person, "{}") == std::vector<std::string>{"'items' is a required property at $"});
  // Keys that are not plain names are quoted in the path.
  CHECK(violations(R"({"properties":{"a/b~c":{"type":"string"}}})", R"({"a/b~c":1})") ==
        std::vector<std::string>{"1 is not of type 'string' at $['a/b~c']"});
  // true accepts anything, false nothing.
  CHECK(compiled("true")->violations(boost::json::parse("[1,2]")).empty());
  CHECK(compiled("false")->violations(boost::json::parse("1")) == std::vector<std::string>{"the schema accepts no value here"});
  CHECK(violations(R"({"properties":{"a":false}})", R"({"a":1})") ==
        std::vector<std::string>{"failed to validate against schema associated with property name 'a' at $"});
  const auto s = compiled(person);
  CHECK(s->origin() == "inline");
  CHECK(s->document() == boost::json::parse(person));
}

TEST_CASE("output_schema: a violation names the bad value and what the schema allows, as Python's jsonschema does") {
  const auto priorities = R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object",
    "properties":{"priority":{"enum":["low","medium","high"]}}}}}})";
  CHECK(violations(priorities, R"({"items":[{"priority":"low"},{},{"priority":"urgent"}]})") ==
        std::vector<std::string>{"'urgent' is not one of ['low', 'medium', 'high'] at $.items[2].priority"});
  auto one = [](const std::string& schema, const std::string& value) {
    const auto v = violations(schema, value);
    return v.size() == 1 ? v[0] : "<" + std::to_string(v.size()) + " violations>";
  };
  CHECK(one(R"({"properties":{"n":{"type":"integer"}}})", R"({"n":"x"})") == "'x' is not of type 'integer' at $.n");
  CHECK(one(R"({"type":["integer","null"]})", R"("x")") == "'x' is not of type 'integer', 'null' at $");
  CHECK(one(R"({"const":"yes"})", R"("no")") == "'yes' was expected, not 'no' at $");
  CHECK(one(R"({"maximum":2})", "3") == "3 is greater than the maximum of 2 at $");
  CHECK(one(R"({"minimum":2.5})", "1") == "1 is less than the minimum of 2.5 at $");
  CHECK(one(R"({"exclusiveMaximum":2})", "2") == "2 is greater than or equal to the maximum of 2 at $");
  CHECK(one(R"({"exclusiveMinimum":2})", "2") == "2 is less than or equal to the minimum of 2 at $");
  CHECK(one(R"({"minLength":3})", R"("ab")") == "'ab' is too short (minLength: 3) at $");
  CHECK(one(R"({"maxLength":1})", R"("ab")") == "'ab' is too long (maxLength: 1) at $");
  CHECK(one(R"({"pattern":"^[a-z]+$"})", R"("A1")") == "'A1' does not match '^[a-z]+$' at $");
  CHECK(one(R"({"minItems":1})", "[]") == "[] is too short (minItems: 1) at $");
  CHECK(one(R"({"maxItems":1})", "[1, true]") == "[1, true] is too long (maxItems: 1) at $");
  CHECK(one(R"({"properties":{"a":{}},"additionalProperties":false})", R"({"a":1,"b":2,"c":3})") ==
        "additional properties are not allowed ('b', 'c' were unexpected) at $");
  CHECK(one(R"({"additionalProperties":false})", R"({"b":2})") == "additional properties are not allowed ('b' was unexpected) at $");
  // Through $ref and allOf; a list's index and a key that is no plain name in the path.
  CHECK(one(R"({"definitions":{"p":{"enum":[1,2]}},"items":{"allOf":[{"properties":{"a b":{"$ref":"#/definitions/p"}}}]}})",
            R"([{"a b":1},{"a b":3}])") == "3 is not one of [1, 2] at $[1]['a b']");
  // Long texts are cut and control characters escaped.
  CHECK(one(R"({"type":"integer"})", "\"" + std::string(70, 'x') + "\\n\"") == "'" + std::string(60, 'x') + "…' is not of type 'integer' at $");
  CHECK(one(R"({"type":"integer"})", R"("a\nb'c")") == R"('a\nb\'c' is not of type 'integer' at $)");
  CHECK(one(R"({"multipleOf":3})", "7") == "7 is not a multiple of 3 at $");
  CHECK(one(R"({"uniqueItems":true})", "[1,1]") == "[1, 1] has non-unique elements at $");
  // Alternatives each name their own allowed values.
  CHECK(one(R"({"anyOf":[{"enum":[1]},{"enum":[2]}]})", "3") ==
        "3 is not one of [1]; or 3 is not one of [2]; or 3 is not valid under any of the given schemas at $");
}

TEST_CASE("output_schema: an inline schema is read from the step's YAML and is part of the step") {
  const auto r = loaded(agent_with("    output_schema:\n      type: object\n      required: [verdict]\n"
                                   "      properties:\n        verdict: {enum: [approve, reject]}\n    output: review\n"));
  const auto& s = r.steps.at(0);
  REQUIRE(s.output_schema);
  CHECK(s.output_schema->origin() == "inline");
  CHECK(s.output_schema->violations(boost::json::parse(R"({"verdict":"approve"})")).empty());
  CHECK(s.output_schema->violations(boost::json::parse(R"({"verdict":"maybe"})")) ==
        std::vector<std::string>{"'maybe' is not one of ['approve', 'reject'] at $.verdict"});
  CHECK(s.schema_retries == 2);
  // YAML 1.2 typing: `yes` stays the text it is.
  const auto yes = loaded(agent_with("    output_schema: {const: yes}\n"));
  CHECK(yes.steps.at(0).output_schema->violations(boost::json::parse(R"("yes")")).empty());
  // A bash step takes it too (its output is checked once), and so does a looping leaf.
  const auto bash = loaded(head + "  - id: b\n    command: echo 1\n    foreach: [1, 2]\n    output_schema: {type: integer}\n");
  CHECK(bash.steps.at(0).output_schema);
  CHECK(loaded(agent_with("    output_schema: true\n")).steps.at(0).output_schema);
  CHECK_FALSE(loaded(agent_with("")).steps.at(0).output_schema);
}

TEST_CASE("output_schema: a file is read relative to the recipe's directory and its content is in the step's hash") {
  arun::test::temp_dir dir("arun-schema");
  dir.write("schemas/review.json", R"({"type":"object","required":["verdict"]})");
  const auto recipe_file = (dir.root / "recipe.yaml").string();
  const auto text = agent_with("    output_schema: schemas/review.json\n");
  const auto first = loaded(text, recipe_file);
  const auto& s = first.steps.at(0);
  REQUIRE(s.output_schema);
  CHECK(s.output_schema->origin() == "schemas/review.json");
  CHECK(s.output_schema->violations(boost::json::parse("{}")) == std::vector<std::string>{"'verdict' is a required property at $"});
  CHECK_FALSE(s.definition_hash.empty());
  // The same step with another schema in the file is another step for resume --reload.
  dir.write("schemas/review.json", R"({"type":"object","required":["verdict","reason"]})");
  CHECK(loaded(text, recipe_file).steps.at(0).definition_hash != s.definition_hash);
  dir.write("schemas/review.json", R"({"type":"object","required":["verdict"]})");
  CHECK(loaded(text, recipe_file).steps.at(0).definition_hash == s.definition_hash);
  // An absolute path is taken as it is.
  const auto absolute = loaded(agent_with("    output_schema: " + (dir.root / "schemas/review.json").string() + "\n"), "r.yaml");
  CHECK(absolute.steps.at(0).output_schema);
}

TEST_CASE("output_schema: a schema file may be YAML and is kept by the session's sources") {
  arun::test::temp_dir dir("arun-schema");
  const auto path = dir.write("review.yaml", "type: object\nproperties:\n  score: {type: number, maximum: 10}\n");
  const auto recipe_file = (dir.root / "recipe.yaml").string();
  copies sources;
  const auto r = loaded(agent_with("    output_schema: review.yaml\n"), recipe_file, &sources);
  CHECK(r.steps.at(0).output_schema->violations(boost::json::parse(R"({"score":11})")) ==
        std::vector<std::string>{"11 is greater than the maximum of 10 at $.score"});
  REQUIRE(sources.read_texts.size() == 1);
  CHECK(sources.read_texts.begin()->second.starts_with("type: object"));
  // A resumed session reads its copy, not the file (which may have changed or gone).
  copies replay;
  replay.saved_texts[sources.read_texts.begin()->first] = "{\"type\": \"string\"}";
  std::filesystem::remove(path);
  const auto resumed = loaded(agent_with("    output_schema: review.yaml\n"), recipe_file, &replay);
  CHECK(resumed.steps.at(0).output_schema->violations(boost::json::parse("\"x\"")).empty());
}

TEST_CASE("output_schema: a missing or unreadable file is a diagnostic at the value") {
  arun::test::temp_dir dir("arun-schema");
  const auto recipe_file = (dir.root / "recipe.yaml").string();
  CHECK(first_error(agent_with("    output_schema: nope.json\n"), recipe_file) ==
        recipe_file + ":5:20: error: output_schema 'nope.json' does not exist (looked for " + (dir.root / "nope.json").string() + ")");
  std::filesystem::create_directories(dir.root / "dir.json");
  CHECK(first_error(agent_with("    output_schema: dir.json\n"), recipe_file) ==
        recipe_file + ":5:20: error: output_schema 'dir.json' is not a regular file");
  dir.write("bad.json", "{\"type\": \n  \"object\",,}");
  CHECK(first_error(agent_with("    output_schema: bad.json\n"), recipe_file) ==
        recipe_file + ":5:20: error: output_schema 'bad.json' is not valid JSON: syntax error at line 2, column 12");
  dir.write("bad.yaml", "type: [object\n");
  CHECK_THAT(first_error(agent_with("    output_schema: bad.yaml\n"), recipe_file),
             StartsWith(recipe_file + ":5:20: error: output_schema 'bad.yaml' is neither JSON nor YAML: "));
  dir.write("list.yaml", "- type: object\n");
  CHECK(first_error(agent_with("    output_schema: list.yaml\n"), recipe_file) ==
        recipe_file + ":5:20: error: output_schema 'list.yaml': a JSON Schema is a mapping (or true or false), not a list");
  dir.write("types.json", R"({"type": "strin"})");
  CHECK(first_error(agent_with("    output_schema: types.json\n"), recipe_file) ==
        recipe_file + ":5:20: error: output_schema 'types.json': the schema is not valid: unrecognised JSON type name 'strin'");
  CHECK(first_error(agent_with("    output_schema: \"{{schema}}\"\n")) ==
        "r.yaml:5:20: error: output_schema is read when the recipe loads: templates are not rendered in its path");
  CHECK(first_error(agent_with("    output_schema: [a]\n")) ==
        "r.yaml:5:20: error: 'output_schema' must be a JSON Schema (a mapping, true or false) or the path of a schema file");
  CHECK(first_error(agent_with("    output_schema: {properties: {a: {type: 1}}}\n")) ==
        "r.yaml:5:20: error: output_schema: the schema is not valid: JSON value is not a string");
  CHECK(first_error(agent_with("    output_schema: {type: object, type: array}\n")) ==
        "r.yaml:5:35: error: duplicate key 'type' in 'output_schema'");
}

TEST_CASE("output_schema: a $ref to #/definitions works and one outside the schema is refused") {
  const auto s = compiled(R"({"definitions":{"name":{"type":"string","minLength":1}},
    "type":"object","properties":{"first":{"$ref":"#/definitions/name"},"last":{"$ref":"#/definitions/name"}}})");
  CHECK(s->violations(boost::json::parse(R"({"first":"a","last":"b"})")).empty());
  CHECK(s->violations(boost::json::parse(R"({"first":"","last":2})")) ==
        std::vector<std::string>{"'' is too short (minLength: 1) at $.first", "2 is not of type 'string' at $.last"});
  // A recursive schema is fine: each level goes into the value.
  const auto tree = compiled(R"({"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}})");
  CHECK(tree->violations(boost::json::parse(R"({"children":[{"children":[]}]})")).empty());
  CHECK(tree->violations(boost::json::parse(R"({"children":[{"children":5}]})")).size() == 1);
  // Other files and the network are never read.
  CHECK(refusal(R"({"properties":{"a":{"$ref":"other.json#/x"}}})") ==
        "$ref 'other.json#/x' at #/properties/a points outside this schema: only local references ('#/...') are "
        "allowed, no other file and no network");
  CHECK_THAT(refusal(R"({"$ref":"https://example.com/s.json"})"), StartsWith("$ref 'https://example.com/s.json' at # points outside"));
  CHECK(refusal(R"({"items":{"$ref":"#/definitions/missing"}})") ==
        "$ref '#/definitions/missing' at #/items points at nothing in this schema");
  CHECK(refusal(R"({"$ref":"#anchor"})") == "$ref '#anchor' at # is not a JSON pointer such as '#/definitions/NAME'");
  CHECK(refusal(R"({"not":{"$ref":5}})") == "the $ref at #/not must be a string");
  // As the loader says it, at the value.
  CHECK(first_error(agent_with("    output_schema:\n      $ref: \"other.yaml#/x\"\n")) ==
        "r.yaml:6:13: error: output_schema: $ref 'other.yaml#/x' at # points outside this schema: only local references "
        "('#/...') are allowed, no other file and no network");
}

TEST_CASE("output_schema: references that loop without going into the value are refused without a crash") {
  CHECK(refusal(R"({"$ref":"#"})") ==
        "the schema refers back to itself without going into the value (# -> #): checking a value would never end");
  CHECK(refusal(R"({"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}},"$ref":"#/definitions/a"})") ==
        "the schema refers back to itself without going into the value (#/definitions/a -> #/definitions/b -> "
        "#/definitions/a): checking a value would never end");
  // Through the keywords that apply to the value itself as well (valijson overflows on them
  // when it validates).
  CHECK_THAT(refusal(R"({"allOf":[{"$ref":"#"}]})"), Contains("(# -> #/allOf/0 -> #)"));
  CHECK_THAT(refusal(R"({"definitions":{"a":{"anyOf":[{"type":"string"},{"not":{"$ref":"#/definitions/a"}}]}},"$ref":"#/definitions/a"})"),
             Contains("never end"));
  CHECK_THAT(refusal(R"({"if":{"$ref":"#"}})"), Contains("never end"));
  CHECK_THAT(refusal(R"({"dependencies":{"a":{"$ref":"#"}}})"), Contains("never end"));
  // Going into the value ends: properties, items, additionalProperties.
  CHECK(refusal(R"({"additionalProperties":{"$ref":"#"},"items":{"$ref":"#"}})") == "<compiled>");
  CHECK(first_error(agent_with("    output_schema: {$ref: \"#\"}\n")) ==
        "r.yaml:5:20: error: output_schema: the schema refers back to itself without going into the value (# -> #): "
        "checking a value would never end");
}

TEST_CASE("output_schema: a pattern std::regex refuses is a load diagnostic and never a crash") {
  CHECK(refusal(R"({"properties":{"id":{"type":"string","pattern":"(ab"}}})") ==
        "the pattern '(ab' at #/properties/id/pattern is not a regular expression arun can use: mismatched '(' and "
        "')' in regular expression");
  CHECK_THAT(refusal(R"({"patternProperties":{"[z-a]":{}}})"), StartsWith("the pattern '[z-a]' at #/patternProperties/[z-a] is not"));
  CHECK(refusal(R"({"pattern":")" + std::string(1001, 'a') + R"("})") ==
        "the pattern at #/pattern is longer than 1000 characters");
  CHECK(first_error(agent_with("    output_schema: {type: string, pattern: \"[\"}\n")) ==
        "r.yaml:5:44: error: output_schema: the pattern '[' at #/pattern is not a regular expression arun can use: "
        "unexpected character within '[...]' in regular expression");
  // A pattern that compiles checks strings only.
  const auto s = compiled(R"({"items":{"pattern":"^[a-z]+$"}})");
  CHECK(s->violations(boost::json::parse(R"(["abc", 5])")).empty());
  CHECK(s->violations(boost::json::parse(R"(["ABC"])")) ==
        std::vector<std::string>{"'ABC' does not match '^[a-z]+$' at $[0]"});
}

TEST_CASE("output_schema: a format is checked on strings only and a validator failure is a violation") {
  // valijson 1.0 throws when a `format` meets an object: arun's copy applies it to strings.
  const auto s = compiled(R"({"properties":{"due":{"format":"date"},"at":{"format":"email"}}})");
  CHECK(s->violations(boost::json::parse(R"({"due":{"y":1},"at":{"a":1}})")).empty());
  CHECK(s->violations(boost::json::parse(R"({"due":"2024-02-30"})")).size() == 1);
  CHECK(s->violations(boost::json::parse(R"({"due":"tomorrow"})")) == std::vector<std::string>{"'tomorrow' is not a 'date' at $.due"});
  CHECK(s->violations(boost::json::parse(R"({"due":"2024-02-03"})")).empty());
  // The document shown to an agent is the one written.
  CHECK(s->document() == boost::json::parse(R"({"properties":{"due":{"format":"date"},"at":{"format":"email"}}})"));
}

TEST_CASE("output_schema: only agent and bash steps take it") {
  CHECK(first_error(head + "  - id: a\n    recipe: other\n    output_schema: {type: object}\n") ==
        "r.yaml:5:20: error: 'output_schema' belongs to agent and bash steps, not to this recipe step");
  CHECK(first_error(head + "  - id: a\n    foreach: [1]\n    output_schema: {type: object}\n    steps:\n"
                           "      - id: b\n        command: x\n") ==
        "r.yaml:5:20: error: 'output_schema' belongs to agent and bash steps, not to this loop step");
  CHECK(first_error(head + "  - id: a\n    requires_approval: true\n    limit_group: x\n") ==
        "r.yaml:5:18: error: 'limit_group' belongs to agent and bash steps, not to this approval gate step");
}

TEST_CASE("schema_retries: a whole number from 0 on agent steps with an output_schema") {
  CHECK(loaded(agent_with("    output_schema: {type: object}\n    schema_retries: 0\n")).steps.at(0).schema_retries == 0);
  CHECK(loaded(agent_with("    output_schema: {type: object}\n    schema_retries: 5\n")).steps.at(0).schema_retries == 5);
  CHECK(first_error(agent_with("    output_schema: {type: object}\n    schema_retries: -1\n")) ==
        "r.yaml:6:21: error: 'schema_retries' must be a whole number from 0 to 100");
  CHECK(first_error(agent_with("    output_schema: {type: object}\n    schema_retries: two\n")) ==
        "r.yaml:6:21: error: 'schema_retries' must be a whole number from 0 to 100");
  CHECK(first_error(head + "  - id: a\n    command: x\n    output_schema: {type: object}\n    schema_retries: 1\n") ==
        "r.yaml:6:21: error: 'schema_retries' belongs to agent steps, not to this bash step");
  CHECK(first_warning(agent_with("    schema_retries: 1\n")) ==
        "r.yaml:5:21: warning: 'schema_retries' has no effect without output_schema");
}

TEST_CASE("limit_group: a name on agent and bash steps") {
  CHECK(loaded(agent_with("    limit_group: anthropic\n")).steps.at(0).limit_group == "anthropic");
  CHECK(loaded(head + "  - id: a\n    command: x\n    limit_group: gh-api:v3.1_x\n").steps.at(0).limit_group == "gh-api:v3.1_x");
  CHECK(loaded(agent_with("")).steps.at(0).limit_group.empty());
  CHECK(first_error(agent_with("    limit_group: \"my group\"\n")) ==
        "r.yaml:5:18: error: 'limit_group' must be a name of letters, digits, '_', '.', ':' and '-'");
  CHECK(first_error(agent_with("    limit_group: \"\"\n")) ==
        "r.yaml:5:18: error: 'limit_group' must be a name of letters, digits, '_', '.', ':' and '-'");
  CHECK(first_error(agent_with("    limit_group: \"{{g}}\"\n")) ==
        "r.yaml:5:18: error: 'limit_group' must be a name of letters, digits, '_', '.', ':' and '-' (limit groups "
        "are read when the recipe loads: templates are not rendered)");
  CHECK(first_error(head + "  - id: a\n    recipe: other\n    limit_group: x\n") ==
        "r.yaml:5:18: error: 'limit_group' belongs to agent and bash steps, not to this recipe step");
}

TEST_CASE("limits: names to whole numbers from 1 with each mistake at its place") {
  const auto r = loaded("name: x\nlimits:\n  anthropic: 4\n  gh-api: 1\nsteps:\n  - id: a\n    command: x\n");
  CHECK(r.limits == std::map<std::string, int, std::less<>>{{"anthropic", 4}, {"gh-api", 1}});
  CHECK(r.limits_where.line == 3);
  const std::string tail = "steps:\n  - id: a\n    command: x\n";
  CHECK(first_error("name: x\nlimits:\n  anthropic: 0\n" + tail) ==
        "r.yaml:3:14: error: the limit of 'anthropic' must be a whole number from 1 to 100000");
  CHECK(first_error("name: x\nlimits:\n  anthropic: 2.5\n" + tail) ==
        "r.yaml:3:14: error: the limit of 'anthropic' must be a whole number from 1 to 100000");
  CHECK(first_error("name: x\nlimits:\n  anthropic: many\n" + tail) ==
        "r.yaml:3:14: error: the limit of 'anthropic' must be a whole number from 1 to 100000");
  CHECK(first_error("name: x\nlimits:\n  \"a b\": 2\n" + tail) ==
        "r.yaml:3:3: error: limit name 'a b' must use letters, digits, '_', '.', ':' and '-'");
  CHECK(first_error("name: x\nlimits:\n  a: 2\n  a: 3\n" + tail) == "r.yaml:4:3: error: duplicate key 'a' in 'limits'");
  CHECK(first_error("name: x\nlimits: 4\n" + tail) ==
        "r.yaml:2:9: error: 'limits' must be a mapping of provider or limit_group names to counts (limits: "
        "{anthropic: 4, github-api: 2})");
}

TEST_CASE("budget: cost_usd and tokens above 0 and no other key") {
  const std::string tail = "steps:\n  - id: a\n    command: x\n";
  const auto r = loaded("name: x\nbudget:\n  cost_usd: 12.5\n  tokens: 2000000\n" + tail);
  CHECK(r.budget.cost_usd == 12.5);
  CHECK(r.budget.tokens == 2000000u);
  CHECK(r.budget_where.line == 3);
  CHECK(loaded("name: x\nbudget: {cost_usd: 3}\n" + tail).budget.cost_usd == 3.0);
  CHECK_FALSE(loaded("name: x\nbudget: {tokens: 10}\n" + tail).budget.cost_usd);
  CHECK(loaded(head + "  - id: a\n    command: x\n").budget.empty());
  CHECK(first_error("name: x\nbudget:\n  cost_usd: -1\n" + tail) ==
        "r.yaml:3:13: error: 'cost_usd' must be a number of US dollars above 0");
  CHECK(first_error("name: x\nbudget:\n  cost_usd: 0\n" + tail) ==
        "r.yaml:3:13: error: 'cost_usd' must be a number of US dollars above 0");
  CHECK(first_error("name: x\nbudget:\n  tokens: 1.5\n" + tail) == "r.yaml:3:11: error: 'tokens' must be a whole number above 0");
  CHECK(first_error("name: x\nbudget:\n  tokens: -3\n" + tail) == "r.yaml:3:11: error: 'tokens' must be a whole number above 0");
  CHECK(first_error("name: x\nbudget:\n  dollars: 5\n" + tail) ==
        "r.yaml:3:3: error: unknown key 'dollars' in the budget (known keys: cost_usd, tokens)");
  CHECK(first_error("name: x\nbudget:\n  token: 5\n" + tail) ==
        "r.yaml:3:3: error: unknown key 'token' in the budget (did you mean 'tokens'?)");
  CHECK(first_error("name: x\nbudget: {}\n" + tail) == "r.yaml:2:9: error: 'budget' needs cost_usd, tokens or both (budget: {cost_usd: 20})");
  CHECK(first_error("name: x\nbudget: 20\n" + tail) ==
        "r.yaml:2:9: error: 'budget' must be a mapping (cost_usd, tokens) (budget: {cost_usd: 20, tokens: 5000000})");
}

TEST_CASE("extends: limits merge per name and a budget is inherited whole") {
  const std::string tail = "steps:\n  - id: a\n    command: x\n";
  auto parent = loaded("name: p\nlimits: {anthropic: 4, openai: 2}\nbudget: {cost_usd: 10, tokens: 100}\n" + tail);
  auto child = loaded("name: c\nlimits: {anthropic: 1, local: 8}\n" + tail);
  auto merged = arun::io::merge_extended(parent, child);
  CHECK(merged.limits == std::map<std::string, int, std::less<>>{{"anthropic", 1}, {"local", 8}, {"openai", 2}});
  CHECK(merged.limits_where.line == 2);
  CHECK(merged.budget.cost_usd == 10.0);
  CHECK(merged.budget.tokens == 100u);
  // A child's budget replaces the parent's: its unset key is not taken from the parent.
  auto frugal = loaded("name: c\nbudget: {cost_usd: 1}\n" + tail);
  merged = arun::io::merge_extended(parent, frugal);
  CHECK(merged.budget.cost_usd == 1.0);
  CHECK_FALSE(merged.budget.tokens);
  CHECK(merged.limits.size() == 2);
}

TEST_CASE("output schema: a pattern checks long texts without overflowing the stack") {
  auto compiled = arun::io::output_schema::compile(boost::json::parse(R"({"type": "string", "pattern": "^[a-z]+$"})"), "inline");
  auto* schema = std::get_if<std::shared_ptr<const arun::io::output_schema>>(&compiled);
  REQUIRE(schema);
  CHECK((*schema)->violations(boost::json::string(std::string(300000, 'a'))).empty());
  const auto bad = (*schema)->violations(boost::json::string(std::string(300000, 'a') + "B"));
  REQUIRE(bad.size() == 1);
  CHECK(bad[0] == "'" + std::string(60, 'a') + "…' does not match '^[a-z]+$' at $");
  const auto huge = (*schema)->violations(boost::json::string(std::string(2 * 1024 * 1024, 'a')));
  REQUIRE(huge.size() == 1);
  CHECK(huge[0].find("too long to check against the schema's patterns") != std::string::npos);
}
