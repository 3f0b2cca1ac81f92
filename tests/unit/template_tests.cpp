// Templates (docs/reference/templates.md): paths, value text, the undefined rules, type-preserving
// rendering.
#include <catch2/catch.hpp>

#include "template/render.hpp"

#include <boost/json/parse.hpp>

using namespace arun::engine;

namespace {

const boost::json::object& context() {
  static const auto ctx = boost::json::parse(R"({
    "name": "world", "n": 5, "pi": 1.5, "big": 100000.0, "yes": true, "nothing": null,
    "list": [1, "two", {"three": 3}], "obj": {"status": "ok", "nested": {"deep": [10, 20]}, "0": "zero-key",
    "with space": "spaced"}, "empty": "", "multi": "line1\nline2\n", "dash-name": "dashed"
  })").as_object();
  return ctx;
}

std::string render(std::string_view text, undefined_mode mode = undefined_mode::normal,
                   const name_set* declared = nullptr) {
  const auto r = render_text(text, {context(), declared, mode});
  return r.ok() ? r.text : "ERROR: " + r.error;
}

}  // namespace

TEST_CASE("paths parse with dots, indexes and quoted keys") {
  struct row {
    std::string text;
    std::string canonical;  // empty: not a path
  };
  const std::vector<row> rows = {
      {"a", "a"},
      {"  a  ", "a"},
      {"a.b.c", "a.b.c"},
      {"a.0", "a.0"},
      {"a[0]", "a[0]"},
      {"a['b c']", "a['b c']"},
      {"a[\"b\"]", "a.b"},
      {"a.b[2].c", "a.b[2].c"},
      {"dash-name", "dash-name"},
      {"_private", "_private"},
      {"#if x", ""},
      {"a b", ""},
      {"1x", ""},
      {"a.", ""},
      {"a[", ""},
      {"a[x]", ""},
      {"a['unclosed]", ""},
      {"a.0b", ""},
      {"", ""},
      {"a..b", ""},
      {"a.b-c", "a.b-c"},
  };
  for (const auto& r : rows) {
    INFO("path: '" << r.text << "'");
    const auto ref = parse_reference(r.text);
    if (r.canonical.empty())
      CHECK_FALSE(ref);
    else {
      REQUIRE(ref);
      CHECK(ref->text() == r.canonical);
    }
  }
}

TEST_CASE("values render as docs/reference/templates.md says") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"hello {{name}}", "hello world"},
      {"{{ name }}", "world"},
      {"{{n}}", "5"},
      {"{{pi}}", "1.5"},
      {"{{big}}", "100000.0"},
      {"{{yes}}", "true"},
      {"[{{nothing}}]", "[]"},
      {"{{list}}", R"([1,"two",{"three":3}])"},
      {"{{list.1}}", "two"},
      {"{{list[2].three}}", "3"},
      {"{{obj.nested.deep[1]}}", "20"},
      {"{{obj.nested}}", R"({"deep":[10,20]})"},
      {"{{obj.0}}", "zero-key"},
      {"{{obj['with space']}}", "spaced"},
      {"{{multi}}", "line1\nline2\n"},
      {"{{dash-name}}", "dashed"},
      {"{{name}}{{n}}", "world5"},
      {"{{#if x}} stays", "{{#if x}} stays"},
      {"{{ a b }} stays", "{{ a b }} stays"},
      {"{{{name}}}", "{world}"},
      {"{{name", "{{name"},
      {"no refs", "no refs"},
      {"", ""},
  };
  for (const auto& [text, expected] : rows) {
    INFO("template: " << text);
    CHECK(render(text) == expected);
  }
}

TEST_CASE("a reference declared nowhere is an error listing the defined names") {
  const name_set declared = {"name", "n", "later_output"};
  CHECK(render("{{nope}}", undefined_mode::normal, &declared) ==
        "ERROR: undefined variable 'nope' in {{nope}} (defined: later_output, n, name)");
  CHECK(render("{{nope}}", undefined_mode::strict, &declared).rfind("ERROR: undefined variable 'nope'", 0) == 0);
}

TEST_CASE("a declared reference without a value renders empty with a warning") {
  const name_set declared = {"name", "later_output"};
  const auto r = render_text("[{{later_output}}]", {context(), &declared, undefined_mode::normal});
  REQUIRE(r.ok());
  CHECK(r.text == "[]");
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0] == "{{later_output}} has no value (the step that sets 'later_output' was skipped, failed or "
                         "has not run): rendered empty");
}

TEST_CASE("a missing path below a value renders empty with a warning, an error under --strict") {
  const auto r = render_text("{{obj.missing}}|{{list[9]}}|{{name.x}}", {context()});
  REQUIRE(r.ok());
  CHECK(r.text == "||");
  CHECK(r.warnings.size() == 3);
  CHECK(render("{{obj.missing}}", undefined_mode::strict) ==
        "ERROR: {{obj.missing}} does not exist in the value of 'obj'");
  const name_set declared = {"later"};
  CHECK(render("{{later}}", undefined_mode::strict, &declared).rfind("ERROR: {{later}} has no value", 0) == 0);
}

TEST_CASE("lenient mode renders every undefined reference empty with a warning") {
  const name_set declared = {"name"};
  const auto r = render_text("a{{nope}}b", {context(), &declared, undefined_mode::lenient});
  REQUIRE(r.ok());
  CHECK(r.text == "ab");
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0] == "{{nope}} names an undefined variable: rendered empty");
}

TEST_CASE("a string that is exactly one reference keeps the value's type") {
  const auto input = boost::json::parse(R"({"files": "{{list}}", "count": " {{ n }} ", "label": "n={{n}}",
                                             "nested": {"flag": "{{yes}}", "items": ["{{pi}}", "x{{pi}}"]},
                                             "plain": 7, "none": "{{nothing}}"})");
  const auto r = render_value(input, {context()});
  REQUIRE(r.ok());
  const auto expected = boost::json::parse(R"({"files": [1, "two", {"three": 3}], "count": 5, "label": "n=5",
                                                "nested": {"flag": true, "items": [1.5, "x1.5"]},
                                                "plain": 7, "none": null})");
  CHECK(r.value == expected);
}

TEST_CASE("type-preserving rendering reports errors and warnings") {
  const name_set declared = {"list", "unset_one"};
  auto r = render_value(boost::json::parse(R"(["{{unset_one}}", "{{list}}"])"), {context(), &declared});
  REQUIRE(r.ok());
  CHECK(r.value.as_array()[0].is_null());
  CHECK(r.warnings.size() == 1);
  r = render_value(boost::json::parse(R"({"a": {"b": "{{ghost}}"}})"), {context(), &declared});
  CHECK_FALSE(r.ok());
  CHECK(r.error.rfind("undefined variable 'ghost'", 0) == 0);
}

TEST_CASE("find_references reports positions of the braces") {
  const auto spans = find_references("x {{a}} y {{ b.c }} {{not a path}}");
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].begin == 2);
  CHECK(spans[0].end == 7);
  CHECK(spans[1].ref.text() == "b.c");
  CHECK(sole_reference("  {{a}} ")->text() == "a");
  CHECK_FALSE(sole_reference("{{a}}{{b}}"));
  CHECK_FALSE(sole_reference("x{{a}}"));
}
