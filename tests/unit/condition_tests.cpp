// Conditions (docs/reference/conditions.md): grammar, coercions, truthiness, short-circuit,
// functions and methods, `{{ref}}` typing and literal interpolation, the undefined rules, errors
// and limits.
#include <catch2/catch.hpp>

#include "condition/condition.hpp"

#include <boost/json/parse.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace arun::engine;

namespace {

const boost::json::object& context() {
  static const auto ctx = boost::json::parse(R"({
    "name": "world", "n": 5, "zero": 0, "pi": 1.5, "yes": true, "no": false, "nothing": null,
    "count_text": "3\n", "num_text": "42", "float_text": "2.5", "flag_text": "TRUE", "zero_text": "0",
    "none_text": "None", "status": "in progress", "quote": "it's \"quoted\"", "empty": "", "files": [],
    "list": [1, "two", {"three": 3}], "nums": [3, 1, 2], "obj": {"status": "ok", "nested": {"deep": [10, 20]},
    "0": "zero-key"}, "empty_obj": {}, "out": "x=true y=false", "big": 9223372036854775807,
    "dash-name": "dashed", "len": "ctx-len", "padded": "  Hello World  ", "csv": "a,b,,c"
  })").as_object();
  return ctx;
}

// Every context key, plus `later`: declared (a step would set it) but without a value.
const name_set& declared() {
  static const name_set names = [] {
    name_set n{"later"};
    for (const auto& kv : context()) n.emplace(kv.key());
    return n;
  }();
  return names;
}

condition_outcome evaluate(std::string_view text, undefined_mode mode = undefined_mode::normal) {
  auto parsed = parse_condition(text);
  if (auto* error = std::get_if<condition_error>(&parsed)) {
    condition_outcome out;
    out.error = *error;
    return out;
  }
  return evaluate_condition(std::get<condition>(parsed), {context(), &declared(), mode});
}

struct value_row {
  std::string text;
  bool expected;
};

void check_values(const std::vector<value_row>& rows) {
  for (const auto& row : rows) {
    INFO("condition: " << row.text);
    const auto out = evaluate(row.text);
    if (out.error) INFO("error at column " << out.error->column << ": " << out.error->message);
    REQUIRE_FALSE(out.error);
    CHECK(out.value == row.expected);
    CHECK(out.warnings.empty());
  }
}

void check_true(const std::vector<std::string>& texts) {
  std::vector<value_row> rows;
  for (const auto& t : texts) rows.push_back({t, true});
  check_values(rows);
}

struct error_row {
  std::string text;
  std::string message;  // a substring of the message
  std::size_t column;
};

void check_errors(const std::vector<error_row>& rows, undefined_mode mode = undefined_mode::normal) {
  for (const auto& row : rows) {
    INFO("condition: " << row.text);
    const auto out = evaluate(row.text, mode);
    REQUIRE(out.error);
    INFO("message: " << out.error->message);
    CHECK(out.error->message.find(row.message) != std::string::npos);
    CHECK(out.error->column == row.column);
    CHECK_FALSE(out.value);
  }
}

}  // namespace

TEST_CASE("arithmetic follows Python's rules, with numeric strings read as numbers") {
  check_true({
      "1 + 2 == 3", "7 - 10 == -3", "6 * 7 == 42", "7 / 2 == 3.5", "6 / 3 == 2", "isinstance(6 / 3, float)",
      "7 % 3 == 1", "-7 % 3 == 2", "7 % -3 == -2", "-7.5 % 2 == 0.5", "5 % 2.5 == 0", "2 + 3 * 4 == 14",
      "(2 + 3) * 4 == 20", "10 - 4 - 3 == 3", "100 / 10 / 5 == 2", "-2 * -3 == 6", "--5 == 5", "- -5 == 5",
      "- 3 + 5 == 2", "-{{n}} == -5", "-{{nums}}[0] == -3", "{{count_text}} + 1 == 4", "'2' * 3 == 6",
      "isinstance(1 + 2, int)", "isinstance(1 + 2.0, float)", "1.5 + 1.5 == 3", "2e3 == 2000",
      "0.1 + 0.2 != 0.3", "{{big}} + 1 > {{big}}", "isinstance({{big}} + 1, float)", "{{pi}} * 2 == 3",
  });
}

TEST_CASE("+ concatenates two strings or two lists") {
  check_true({"'a' + 'b' == 'ab'", "'1' + '2' == '12'", "[1] + [2, 3] == [1, 2, 3]", "{{name}} + '!' == 'world!'",
              "[] + [] == []"});
}

TEST_CASE("arithmetic type errors, division by zero and overflow name the operator's column") {
  check_errors({
      {"1 / 0", "division by zero", 3},
      {"1 / 0.0", "division by zero", 3},
      {"1 % 0", "modulo by zero", 3},
      {"'a' + 1", "'+' cannot combine string 'a' and number 1", 5},
      {"'a' - 1", "'-' cannot combine", 5},
      {"[1] * 2", "'*' cannot combine list and number 2", 5},
      {"null + 1", "cannot combine null", 6},
      {"true + 1", "cannot combine bool true", 6},
      {"'1' - '2'", "cannot combine", 5},
      {"1 + 2 + 'x'", "'+' cannot combine number 3 and string 'x'", 7},
      {"-'abc'", "'-' needs a number, got string 'abc'", 1},
      {"--true", "'-' needs a number, got bool true", 1},
      {"1e308 * 10", "numeric overflow", 7},
  });
}

TEST_CASE("== compares numbers numerically, numeric strings as numbers, bool strings as bools, JSON text") {
  check_values({
      {"1 == 1.0", true},
      {"{{n}} == '5'", true},
      {"'5' == {{n}}", true},
      {"{{count_text}} == 3", true},
      {"{{num_text}} == 42.0", true},
      {"{{float_text}} == 2.5", true},
      {"'abc' == 1", false},
      {"'1.0' == '1'", false},
      {"true == 'TRUE'", true},
      {"{{yes}} == 'true'", true},
      {"{{no}} == 'False'", true},
      {"{{flag_text}} == true", true},
      {"true == 'yes'", false},
      {"true == 1", false},
      {"false == 0", false},
      {"{{files}} == '[]'", true},
      {"{{files}} != '[]'", false},
      {"{{files}} != '[1]'", true},
      {R"({{list}} == '[1,"two",{"three":3}]')", true},
      {R"({{obj.nested}} == '{"deep":[10,20]}')", true},
      {"{{empty_obj}} == '{}'", true},
      {"[1, 2] == [1, 2]", true},
      {"[1, 2] == [2, 1]", false},
      {"[1] == [1.0]", true},
      {"['1'] == [1]", false},
      {"{{nothing}} == null", true},
      {"{{nothing}} == ''", false},
      {"null == None", true},
      {"{{obj}} == {{obj}}", true},
      {"'' == {{empty}}", true},
      {"9007199254740993 == 9007199254740992.0", false},
      {R"('true\n' == true)", true},
      {"' 5 ' == 5", true},
      {"'+5' == 5", true},
      {"'0x10' == 16", false},
      {"'inf' == 1e308 * 1", false},
  });
}

TEST_CASE("ordering takes numbers, strings bytewise and numeric strings against numbers") {
  check_values({
      {"1 < 2", true},          {"2 <= 2", true},          {"3 > 2.5", true},
      {"3 >= 3.0", true},       {"2 > 3", false},          {"'a' < 'b'", true},
      {"'B' < 'a'", true},      {"'10' < '9'", true},      {"{{num_text}} > 41", true},
      {"41 < {{num_text}}", true}, {"{{count_text}} >= 3", true}, {"-1 < 0", true},
      {"{{big}} > 9223372036854775806", true}, {"9007199254740993 > 9007199254740992.0", true},
      {"'abc' <= 'abc'", true}, {"'abd' < 'abc'", false},
  });
}

TEST_CASE("ordering other pairs is a type error at the operator") {
  check_errors({
      {"'abc' < 1", "'<' cannot compare string 'abc' with number 1", 7},
      {"[1] < [2]", "'<' cannot compare list with list", 5},
      {"null < 1", "cannot compare null", 6},
      {"true > false", "'>' cannot compare bool true", 6},
      {"{{nothing}} >= 0", "'>=' cannot compare null", 13},
      {"{{obj}} <= 1", "'<=' cannot compare object", 9},
  });
}

TEST_CASE("in finds substrings, list items and object keys, nothing is in null") {
  check_values({
      {"'ell' in 'hello'", true},
      {"'x' not in 'hello'", true},
      {"2 in [1, 2, 3]", true},
      {"'2' in [1, 2, 3]", true},
      {"4 not in [1, 2, 3]", true},
      {"'status' in {{obj}}", true},
      {"'ok' in {{obj}}", false},
      {"1 in {{obj}}", false},
      {"'x' in {{nothing}}", false},
      {"'x' not in null", true},
      {"5 in '1,5,7'", true},
      {"true in 'true story'", true},
      {"null in 'null'", false},
      {"'in prog' in {{status}}", true},
      {"'' in 'abc'", true},
      {"[1] in [[1], [2]]", true},
      {"null in [null]", true},
  });
}

TEST_CASE("in on a number, or a list needle in a string, is a type error") {
  check_errors({
      {"1 in 5", "'in' needs a string, list, object or null on its right, got number 5", 3},
      {"'a' not in true", "got bool true", 5},
      {"[1] in 'abc'", "'in' cannot look for a list in a string", 5},
      {"{{obj}} in 'abc'", "an object in a string", 9},
  });
}

TEST_CASE("is compares without coercion") {
  check_values({
      {"{{nothing}} is None", true}, {"{{nothing}} is null", true}, {"{{n}} is not None", true},
      {"1 is 1.0", true},            {"'1' is 1", false},           {"'1' is not 1", true},
      {"{{yes}} is true", true},     {"'true' is true", false},     {"[1, 2] is [1, 2]", true},
      {"null is ''", false},         {"undefined_name is None", true},
  });
}

TEST_CASE("truthiness follows the table of docs/reference/conditions.md") {
  check_values({
      {"null", false},       {"false", false},      {"0", false},          {"0.0", false},
      {"''", false},         {"[]", false},         {"{{empty_obj}}", false}, {"'false'", false},
      {"'False'", false},    {"'0'", false},        {"'none'", false},     {"'None'", false},
      {"{{zero_text}}", false}, {"{{none_text}}", false}, {"{{zero}}", false}, {"{{files}}", false},
      {"'FALSE'", true},     {"'0.0'", true},       {"' '", true},         {"'no'", true},
      {"1", true},           {"-1", true},          {"0.5", true},         {"[0]", true},
      {"{{obj}}", true},     {"true", true},        {"'true'", true},      {"{{list}}", true},
      {"True", true},        {"False", false},      {"None", false},       {"{{count_text}}", true},
  });
}

TEST_CASE("boolean literals are read in any case, as the Python dialect reads them") {
  check_values({
      {"TRUE", true},
      {"FALSE", false},
      {"tRuE == true", true},
      {"{{yes}} == TRUE", true},
      {"yes == True and no == FALSE", true},
      {"'yes' == FALSE", false},
  });
}

TEST_CASE("and/or short-circuit: the side not evaluated cannot fail or warn") {
  check_values({
      {"false and 1 / 0", false},
      {"true or 1 / 0", true},
      {"false and {{ghost}}", false},
      {"true || {{ghost}}", true},
      {"false && x.lower()", false},
      {"false and {{later}}", false},
      {"true or '{{ghost}}'", true},
      {"{{nothing}} is not None and {{nothing}}.strip() == ''", false},
  });
  check_errors({{"true and 1 / 0", "division by zero", 12}, {"false or 1 / 0", "division by zero", 12}});
}

TEST_CASE("and/or return the deciding operand, as Python does") {
  check_true({
      "(0 or 'default') == 'default'", "({{nothing}} or 5) == 5", "('a' and 'b') == 'b'",
      "(0 and 1 / 0) == 0", "([] or [1]) == [1]", "(1 || 0) == 1", "true && true", "not (false || false)",
      "('' or '' or 'last') == 'last'",
  });
}

TEST_CASE("not and the precedence levels nest as docs/reference/conditions.md lists them") {
  check_values({
      {"not false", true},
      {"not not true", true},
      {"not not not true", false},
      {"not 1 == 2", true},
      {"not 'a' in 'b'", true},
      {"1 + 2 * 3 == 7", true},
      {"not true or true", true},
      {"not (true or true)", false},
      {"true or true and false", true},
      {"(true or true) and false", false},
      {"(1 < 2) == true", true},
      {"-2 + 5 * -1 == -7", true},
  });
}

TEST_CASE("int, float, str and bool convert as documented") {
  check_true({
      "int('42') == 42",    R"(int(' 7\n') == 7)", "int(3.9) == 3",       "int(-3.9) == -3",
      "int('2.5') == 2",    "int(true) == 1",      "isinstance(int('5'), int)", "float('2.5') == 2.5",
      "isinstance(float(2), float)", "float(false) == 0", "float({{num_text}}) == 42",
      "str(5) == '5'",      "str(1.5) == '1.5'",   "str(null) == ''",     "str(true) == 'true'",
      R"(str([1, 'a']) == '[1,"a"]')", "isinstance(str(5), str)", "bool('x')", "not bool('false')",
      "bool([0])",          "not bool({{nothing}})",
  });
}

TEST_CASE("len, min, max and isinstance work on the JSON types") {
  check_true({
      "len('hello') == 5", "len([1, 2]) == 2", "len({{obj}}) == 3", "len(null) == 0", "len({{nothing}}) == 0",
      "len('') == 0", "len({{files}}) == 0", "min(3, 1, 2) == 1", "max(3, 1, 2) == 3", "min([5, 4]) == 4",
      "max(['b', 'a']) == 'b'", "isinstance(max(1, '3'), str)", "min(2.5, 3) == 2.5", "max({{nums}}) == 3",
      "isinstance('a', str)", "isinstance(1, int)", "not isinstance(1, float)", "isinstance(1.5, float)",
      "not isinstance(true, int)", "isinstance(true, bool)", "isinstance([], list)", "isinstance({{obj}}, dict)",
      "isinstance(null, None)", "isinstance({{nothing}}, NoneType)", "isinstance(1, 'int')",
      "isinstance('a', [int, str])", "not isinstance('a', [])", "isinstance({{n}}, ['float', 'int'])",
      "len(str({{n}})) == 1",
  });
}

TEST_CASE("a function name not followed by ( is a plain context name") {
  check_true({"len == 'ctx-len'", "str is None"});
}

TEST_CASE("functions reject values they cannot convert") {
  check_errors({
      {"int('abc')", "int() cannot convert string 'abc'", 1},
      {"int(null)", "int() cannot convert null", 1},
      {"1 + int(1e300)", "out of range", 5},
      {"float('x')", "float() cannot convert string 'x'", 1},
      {"len(5)", "len() needs a string, list or object, got number 5", 1},
      {"min([])", "min() of an empty list", 1},
      {"max(1, 'a')", "max() cannot compare string 'a' with number 1", 1},
      {"min(5)", "min() of one argument needs a list", 1},
  });
}

TEST_CASE("string methods follow Python's str methods") {
  check_true({
      "'  hi  '.strip() == 'hi'", "'xxhixx'.strip('x') == 'hi'", "'  hi  '.lstrip() == 'hi  '",
      "'  hi  '.rstrip() == '  hi'", R"('\n\t'.strip() == '')", "'MiXed'.lower() == 'mixed'",
      "'MiXed'.upper() == 'MIXED'", R"("hello world's 1st".title() == "Hello World'S 1St")",
      "'hello'.startswith('he')", "'hello'.startswith(['x', 'h'])", "not 'hello'.endswith('he')",
      "'hello'.endswith('llo')", "'a-b-c'.replace('-', '+') == 'a+b+c'", "'a-b-c'.replace('-', '', 1) == 'ab-c'",
      "'abc'.replace('', '-') == '-a-b-c-'", "'a b  c'.split() == ['a', 'b', 'c']",
      "'  a b  c '.split(None, 1) == ['a', 'b  c ']", "{{csv}}.split(',') == ['a', 'b', '', 'c']",
      "{{csv}}.split(',', 2) == ['a', 'b', ',c']", "''.split() == []", "''.split(',') == ['']",
      "', '.join(['a', 'b']) == 'a, b'", "'-'.join([1, 2.5, true]) == '1-2.5-true'", "''.join([]) == ''",
      "'banana'.count('an') == 2", "'aaa'.count('') == 4", "'banana'.find('nan') == 2",
      "'banana'.find('x') == -1", "'banana'.contains('nan')", "not 'banana'.contains('x')",
      "{{padded}}.strip().lower() == 'hello world'", "{{name}}.upper() == 'WORLD'",
      "'ABC'.lower().startswith('ab')", "'a,b'.split(',')[1] == 'b'",
  });
}

TEST_CASE("string methods on a number, boolean or null act on its text, lists and objects are refused") {
  // smart-orchestrator's real guard: `workstream_count.strip() == '1'` with a number.
  check_true({"{{n}}.strip() == '5'", "n.strip() == '5'", "pi.startswith('1.')", "yes.upper() == 'TRUE'",
              "nothing.strip() == ''", "zero.find('0') == 0"});
}

TEST_CASE("string methods need a string, number, boolean or null receiver and string arguments") {
  check_errors({
      {"{{list}}.contains(1)", ".contains() needs a string, got list", 9},
      {"obj.lower()", ".lower() needs a string, got object", 4},
      {"'a'.startswith(1)", "must be a string or a list of strings", 4},
      {"'a'.startswith([1])", "list items must be strings", 4},
      {"'a'.split('')", ".split() separator is empty", 4},
      {"'a'.join('b')", ".join() needs a list, got string 'b'", 4},
      {"'a'.count(1)", ".count() argument 1 must be a string, got number 1", 4},
      {"'a'.split(',', 'x')", ".split() argument 2 must be an integer", 4},
      {"'a'.strip(5)", ".strip() argument 1 must be a string", 4},
  });
}

TEST_CASE("postfix access reads keys and indexes, a missing one is null") {
  check_true({
      "{{obj}}.status == 'ok'", "obj.status == 'ok'", "obj.nested.deep[1] == 20", "obj['status'] == 'ok'",
      R"(obj["0"] == 'zero-key')", "obj.0 == 'zero-key'", "list.0 == 1", "list[1] == 'two'",
      "list[-1].three == 3", "list[9] is None", "list['x'] is None", "name.length is None", "n.x is None",
      "nothing.x.y is None", "obj.missing is None", "'abc'[1] == 'b'", "'abc'[-1] == 'c'", "'abc'[5] is None",
      "[10, 20, 30][1 + 1] == 30", "{{list}}[2]['three'] == 3", "obj[1] is None", "list[0.5] is None",
      "list.99999999999999999999 is None",
  });
}

TEST_CASE("{{ref}} is a typed value, never pasted text") {
  check_true({
      "{{status}} == 'in progress'", "{{n}} == 5", "isinstance({{n}}, int)", "isinstance({{list}}, list)",
      "{{list}}[0] == 1", "{{ list[1] }} == 'two'", "{{obj.nested.deep[0]}} == 10", "{{yes}}", "not {{no}}",
      "{{dash-name}} == 'dashed'", R"({{quote}} == 'it\'s "quoted"')", "isinstance({{pi}}, float)",
      "{{obj['0']}} == 'zero-key'",
  });
}

TEST_CASE("{{ref}} inside a quoted literal is interpolated after tokenizing") {
  check_true({
      "'x=true' in '{{out}}'", "'{{name}}!' == 'world!'", "'n={{n}}' == 'n=5'", "'{{quote}}' == {{quote}}",
      R"("{{quote}}".startswith('it'))", R"('{{list}}' == '[1,"two",{"three":3}]')", "'[{{nothing}}]' == '[]'",
      "'{{yes}}' == 'true'", "'{{ n }}' + '1' == '51'", "'{{#if x}}' == '{{' + '#if x}}'",
      R"('{{quote}}'.count('"') == 2)",
  });
}

TEST_CASE("a declared reference without a value is null with a warning, an error under --strict") {
  for (const std::string text : {"{{later}} is None", "'a{{later}}b' == 'ab'", "not {{later}}"}) {
    INFO(text);
    auto out = evaluate(text);
    REQUIRE_FALSE(out.error);
    CHECK(out.value);
    REQUIRE(out.warnings.size() == 1);
    CHECK(out.warnings[0] == "{{later}} has no value (the step that sets 'later' was skipped, failed or has not "
                             "run): null in the condition");
    out = evaluate(text, undefined_mode::strict);
    REQUIRE(out.error);
    CHECK(out.error->message.find("{{later}} has no value") != std::string::npos);
  }
  check_errors({{"1 == 1 and {{later}}", "has no value", 12}, {"x == '{{later}}'", "has no value", 6}},
               undefined_mode::strict);
}

TEST_CASE("a missing path below a value is null with a warning, an error under --strict") {
  auto out = evaluate("{{obj.missing}} is None and {{list[7]}} is None");
  REQUIRE_FALSE(out.error);
  CHECK(out.value);
  CHECK(out.warnings.size() == 2);
  check_errors({{"{{obj.missing}} is None", "{{obj.missing}} does not exist in the value of 'obj'", 1}},
               undefined_mode::strict);
}

TEST_CASE("a reference declared nowhere is null with a warning, as a bare name is null, and strict makes it an error") {
  check_errors({
                   {"{{ghost}} is None", "undefined variable 'ghost' in {{ghost}}", 1},
                   {"'{{ghost}}' == ''", "undefined variable 'ghost'", 1},
                   {"1 == 1 and {{ghost}}", "undefined variable 'ghost'", 12},
               },
               undefined_mode::strict);
  for (const auto mode : {undefined_mode::normal, undefined_mode::lenient})
    for (const std::string text : {"{{ghost}} is None", "'{{ghost}}' == ''", "not {{ghost}}", "{{ghost.field}} is None"}) {
      INFO(text);
      const auto out = evaluate(text, mode);
      REQUIRE_FALSE(out.error);
      CHECK(out.value);
      REQUIRE(out.warnings.size() == 1);
      CHECK_THAT(out.warnings[0], Catch::EndsWith("names an undefined variable: null in the condition"));
    }
}

TEST_CASE("a bare undefined identifier is null without a warning in every mode") {
  for (const auto mode : {undefined_mode::normal, undefined_mode::lenient, undefined_mode::strict}) {
    const auto out = evaluate("ghost is None and not ghost and ghost.field is None", mode);
    REQUIRE_FALSE(out.error);
    CHECK(out.value);
    CHECK(out.warnings.empty());
  }
}

TEST_CASE("without a declared set every root counts as declared") {
  const auto parsed = parse_condition("{{ghost}} is None");
  const auto out = evaluate_condition(std::get<condition>(parsed), {context()});
  REQUIRE_FALSE(out.error);
  CHECK(out.value);
  CHECK(out.warnings.size() == 1);
}

TEST_CASE("parse errors name the column and what was expected") {
  check_errors({
      {"", "empty condition", 1},
      {"   ", "empty condition", 1},
      {"1 +", "expected a value, found end of condition", 4},
      {"(1 + 2", "expected ')' to close '(' at column 1, found end of condition", 7},
      {"[1, 2", "expected ']' to close '[' at column 1", 6},
      {"len(1", "expected ')' to close '(' at column 4", 6},
      {"a[1", "expected ']' to close '[' at column 2", 4},
      {"1 + 2)", "unbalanced ')': nothing to close", 6},
      {"a]", "unbalanced ']'", 2},
      {"x == 1 )", "unbalanced ')'", 8},
      {"1 2", "unexpected number 2 after a complete expression", 3},
      {"a b", "unexpected 'b' after a complete expression", 3},
      {"'a' 'b'", "unexpected a string after", 5},
      {"x not y", "unexpected 'not' after", 3},
      {"'abc", "unterminated string", 1},
      {"x == \"abc", "unterminated string", 6},
      {"{{ a b }}", "expected a reference path inside '{{ }}'", 1},
      {"{{x", "unterminated '{{'", 1},
      {"1 < 2 < 3", "comparisons cannot be chained: use 'and'", 7},
      {"(x == 1 == y)", "comparisons cannot be chained", 9},
      {"a = 1", "use '==' to compare", 3},
      {"!a", "use 'not'", 1},
      {"a | b", "use 'or'", 3},
      {"a & b", "use 'and'", 3},
      {"a ** 2", "expected a value, found '*'", 4},
      {"a // 2", "expected a value, found '/'", 4},
      {"and", "expected a value, found 'and'", 1},
      {"x in", "expected a value, found end of condition", 5},
      {"not", "expected a value, found end of condition", 4},
      {"x is not", "expected a value, found end of condition", 9},
      {"x.(", "expected a name after '.'", 2},
      {"a.0b", "expected a name or an index after '.'", 2},
      {"1x", "invalid number", 2},
      {"1e999", "number out of range", 1},
      {"a ; b", "unexpected character ';'", 3},
      {"{ a }", "unexpected character '{'", 1},
      {"\xff", "unexpected character byte 0xff", 1},
      {"[1,,2]", "expected a value, found ','", 4},
      {"()", "expected a value, found ')'", 2},
      {"- not x", "expected a value, found 'not'", 3},
  });
}

TEST_CASE("unknown functions and methods, bad arity and __ names are parse errors") {
  check_errors({
      {"open('x')", "unknown function 'open'", 1},
      {"x == eval('1')", "unknown function 'eval'", 6},
      {"a.b()", "unknown method 'b'", 2},
      {"'s'.format(1)", "unknown method 'format'", 4},
      {"x.__class__", "names containing '__' are not allowed", 2},
      {"__import__('os')", "names containing '__' are not allowed", 1},
      {"a__b", "names containing '__'", 1},
      {"len()", "len() takes 1 argument, got 0", 1},
      {"len(1, 2)", "len() takes 1 argument, got 2", 1},
      {"max()", "max() takes at least 1 argument, got 0", 1},
      {"isinstance(1)", "isinstance() takes 2 arguments, got 1", 1},
      {"isinstance(1, str, int)", "isinstance() takes 2 arguments, got 3", 1},
      {"isinstance(1, foo)", "isinstance() expects a type", 15},
      {"isinstance(1, 5)", "isinstance() expects a type", 15},
      {"isinstance(1, [str, 'x'])", "found a string", 21},
      {"'s'.lower(1)", "lower() takes 0 arguments, got 1", 4},
      {"'s'.replace('a')", "replace() takes 2 to 3 arguments, got 1", 4},
      {"false and foo()", "unknown function 'foo'", 11},
  });
}

TEST_CASE("a {{ref}} path may contain __: it names a context key, not code") {
  const auto parsed = parse_condition("{{a__b}} is None");
  REQUIRE(std::holds_alternative<condition>(parsed));
  CHECK(evaluate_condition(std::get<condition>(parsed), {context()}).value);
}

TEST_CASE("conditions over 8 KiB are refused") {
  const std::string fits = "'" + std::string(max_condition_bytes - 2, 'x') + "'";
  CHECK(evaluate(fits).value);
  check_errors({{fits + " ", "condition is longer than 8192 bytes", 8193}});
}

TEST_CASE("more than 64 open brackets are refused") {
  const auto nest = [](std::size_t depth, const char* open, const char* close) {
    std::string text;
    for (std::size_t i = 0; i < depth; ++i) text += open;
    text += "1";
    for (std::size_t i = 0; i < depth; ++i) text += close;
    return text;
  };
  CHECK(evaluate(nest(64, "(", ")")).value);
  CHECK(evaluate(nest(64, "[", "]")).value);
  CHECK(evaluate(nest(32, "len([", "])")).value);
  check_errors({
      {nest(65, "(", ")"), "nesting deeper than 64 levels", 65},
      {nest(65, "[", "]"), "nesting deeper than 64 levels", 65},
      {nest(33, "len([", "])"), "nesting deeper than 64 levels", 5 * 32 + 4},
      {std::string(8000, '('), "nesting deeper than 64 levels", 65},
      {"x" + nest(65, "[", "]"), "nesting deeper than 64 levels", 66},
  });
}

TEST_CASE("long chains without brackets neither recurse deeply nor fail") {
  std::string nots, minuses, sums = "1", dots = "obj", ands = "true", indexes = "list";
  for (int i = 0; i < 2000; ++i) nots += "not ";
  for (int i = 0; i < 4000; ++i) minuses += "- ";
  for (int i = 0; i < 1500; ++i) sums += " + 1";
  for (int i = 0; i < 2000; ++i) dots += ".a";
  for (int i = 0; i < 900; ++i) ands += " and true";
  for (int i = 0; i < 2500; ++i) indexes += "[0]";
  check_values({{nots + "true", true}, {minuses + "1", true}, {sums + " == 1501", true}, {dots, false},
                {ands, true}, {indexes, false}});
}

TEST_CASE("condition_references lists every {{ref}}, in literals too, in order") {
  const auto parsed = parse_condition("{{a}} == 'x{{b.c}}y' and {{ a[0] }} or plain or '{{#if z}}'");
  REQUIRE(std::holds_alternative<condition>(parsed));
  const auto refs = condition_references(std::get<condition>(parsed));
  REQUIRE(refs.size() == 3);
  CHECK(refs[0].text() == "a");
  CHECK(refs[1].text() == "b.c");
  CHECK(refs[2].text() == "a[0]");
  CHECK(condition_references(std::get<condition>(parse_condition("1 == 1"))).empty());
}

TEST_CASE("a copied condition evaluates like the original") {
  const auto parsed = parse_condition("{{n}} > 3 and 'o' in {{name}}");
  const condition copy = std::get<condition>(parsed);  // NOLINT(performance-unnecessary-copy-initialization)
  CHECK(evaluate_condition(copy, {context()}).value);
  CHECK(evaluate_condition(std::get<condition>(parsed), {context()}).value);
}

TEST_CASE("parsing and evaluating arbitrary input never throws") {
  static const std::vector<std::string> pieces = {
      "(", ")", "[", "]", ",", ".", "'", "\"", "{{", "}}", "n", "list", "obj", "1", "0", "-", "+", "*", "/",
      "%", "==", "<", "not", "in", "is", "and", "or", "len(", "min(", "'a'", ".strip(", ".split(", "\\", " ",
      "{{n}}", "{{later}}", "true", "null", "1e5", "isinstance(", "str", "[0]", ".0", "\xc3", "'{{ghost}}'",
  };
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::size_t parsed_count = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const auto length = next() % 24;
    for (std::uint64_t j = 0; j < length; ++j) text += pieces[next() % pieces.size()];
    INFO(text);
    CHECK_NOTHROW([&] {
      const auto parsed = parse_condition(text);
      if (const auto* c = std::get_if<condition>(&parsed)) {
        ++parsed_count;
        for (const auto mode : {undefined_mode::normal, undefined_mode::strict})
          (void)evaluate_condition(*c, {context(), &declared(), mode});
      }
    }());
  }
  CHECK(parsed_count > 50);
}
