// Numbers keep their exact value (issue: big numbers changed silently): in YAML a number a
// JSON value cannot hold exactly stays the text it was written as; in --set it does too, and
// inside a JSON --set value it is refused with a message.
#include <catch2/catch.hpp>

#include "recipe/recipe_loader.hpp"
#include "scheduler/foreach_lines.hpp"

#include <arun/context_set.hpp>

#include <boost/json/serialize.hpp>

#include <string>

namespace {

boost::json::value set_value(const std::string& text) {
  std::string error;
  const auto a = arun::parse_set("v=" + text, error);
  INFO(error);
  REQUIRE(a);
  return a->value;
}

std::string set_error(const std::string& text) {
  std::string error;
  CHECK_FALSE(arun::parse_set("v=" + text, error));
  return error;
}

}  // namespace

TEST_CASE("set values keep numbers exact: too large for a JSON number means the text itself") {
  CHECK(set_value("123456789012345678901234567890") == "123456789012345678901234567890");
  CHECK(set_value("1e400") == "1e400");
  CHECK(set_value("1e-400") == "1e-400");
  CHECK(set_value("-99999999999999999999") == "-99999999999999999999");
  CHECK(set_value("18446744073709551615") == boost::json::value(18446744073709551615ull));
  CHECK(set_value("-9223372036854775808") == boost::json::value(std::int64_t(-9223372036854775807LL - 1)));
  CHECK(set_value("42") == 42);
  CHECK(set_value("1.5") == 1.5);
  // Boost.JSON 1.81's own parser reads these one unit off in the last place.
  CHECK(boost::json::serialize(set_value("1795664842.1989675")) == "1.7956648421989675E9");
  CHECK(boost::json::serialize(set_value("[1795664842.1989675]")) == "[1.7956648421989675E9]");
  CHECK(boost::json::serialize(set_value("{\"a\": 1795664842.1989675}")) == "{\"a\":1.7956648421989675E9}");
  CHECK(set_value("\"1e400\"") == "1e400");
  CHECK(set_value("[1, \"123456789012345678901234567890\"]") == boost::json::array{1, "123456789012345678901234567890"});
  CHECK(set_error("[1, 123456789012345678901234567890]") ==
        "--set v: the number 123456789012345678901234567890 does not fit a 64-bit integer or a double exactly; "
        "quote it to keep it as text");
  CHECK_THAT(set_error("{\"a\": 1e400}"), Catch::Contains("the number 1e400 does not fit"));
}

TEST_CASE("a foreach over a JSON list text keeps its numbers as written") {
  // The text a step printed (or a string value holding a list): 1e400 was null, the big
  // integer 1.2345678901234568e+29, and 1795664842.1989675 one unit off.
  const boost::json::value text("[1795664842.1989675, 1e400, 123456789012345678901234567890, 7]");
  const auto items = arun::engine::foreach_items(text, text);
  const auto* list = std::get_if<boost::json::array>(&items);
  REQUIRE(list);
  CHECK(boost::json::serialize(*list) == "[1.7956648421989675E9,\"1e400\",\"123456789012345678901234567890\",7]");
}

TEST_CASE("YAML numbers a JSON value cannot hold exactly stay the text they were written as") {
  const auto r = arun::io::load_recipe_text(
      "name: x\ncontext:\n  big: 123456789012345678901234567890\n  huge: 1e400\n  tiny: 1e-400\n"
      "  u64: 18446744073709551615\n  neg: -99999999999999999999\n  fine: 2.5\n  inf: .inf\n"
      "steps:\n  - id: s\n    command: x\n",
      "r.yaml");
  REQUIRE(r.value);
  const auto& c = r.value->context;
  CHECK(c.at("big") == "123456789012345678901234567890");
  CHECK(c.at("huge") == "1e400");
  CHECK(c.at("tiny") == "1e-400");
  CHECK(c.at("u64") == boost::json::value(18446744073709551615ull));
  CHECK(c.at("neg") == "-99999999999999999999");
  CHECK(c.at("fine") == 2.5);
  for (const auto& kv : c) CHECK_FALSE(kv.value().is_null());
}

TEST_CASE("set values: a JSON string is its text, without the quotes, anything else not JSON is the text as written") {
  CHECK(set_value("\"hello\"") == "hello");
  CHECK(set_value("\"42\"") == "42");  // a way to pass digits as text
  CHECK(set_value("\"\"") == "");
  CHECK(set_value("hello") == "hello");
  CHECK(set_value("'hello'") == "'hello'");  // not JSON: kept as written
  CHECK(set_value("\"unterminated") == "\"unterminated");
}
