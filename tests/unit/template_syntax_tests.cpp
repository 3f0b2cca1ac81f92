// Template text that is not a reference (docs/reference/templates.md, "Text that is not a
// reference"): found with its position, reported by validate at its `{{`; and foreach over
// the lines of a text (docs/reference/recipe.md, "The lines of a text").
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "recipe_builders.hpp"
#include "run_sync.hpp"

#include "output/diagnostic_render.hpp"
#include "recipe/recipe_loader.hpp"
#include "scheduler/foreach_lines.hpp"
#include "template/template_syntax.hpp"

#include <arun/engine.hpp>
#include <arun/validation.hpp>

#include <boost/json/parse.hpp>

namespace io = arun::io;
using arun::engine::find_template_flaws;

namespace {

struct text_source final : io::recipe_sources {
  std::string text;
  explicit text_source(std::string t) : text(std::move(t)) {}
  std::optional<std::string> saved(const std::string&) override { return text; }
  void read(const std::string&, std::string_view) override {}
};

// Load + validate as `arun validate` does; the diagnostics of `code`, rendered as the
// terminal shows them (no colour).
std::vector<std::string> rendered(const std::string& yaml, std::string_view code, std::vector<arun::severity>* levels = nullptr) {
  auto r = io::load_recipe_text(yaml, "r.yaml");
  REQUIRE(r.value);
  auto ds = arun::validate_recipe(*r.value);
  text_source source(yaml);
  io::source_files files(&source);
  io::point_at_snippets(ds, files);
  std::vector<std::string> out;
  for (const auto& d : ds)
    if (d.code == code) {
      out.push_back(io::render_diagnostic(d, files.text("r.yaml"), false));
      if (levels) levels->push_back(d.level);
    }
  return out;
}

boost::json::array lines_of(std::string_view text) { return arun::engine::text_lines(text); }

}  // namespace

TEST_CASE("each {{ that starts no reference is found at its position with what was expected", "[template-syntax]") {
  const auto missing = find_template_flaws("echo {{rounds} done");
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].begin == 5);
  CHECK(missing[0].text == "{{rounds}");
  CHECK(missing[0].problem == "a `}` is missing (a reference ends with `}}`)");
  CHECK(missing[0].hint == "write {{rounds}}");

  const auto filter = find_template_flaws("say {{ name | upper }}!");
  REQUIRE(filter.size() == 1);
  CHECK(filter[0].begin == 4);
  CHECK(filter[0].text == "{{ name | upper }}");
  CHECK(filter[0].problem == "filters are not supported");

  const auto method = find_template_flaws("{{files.split('\n')}}");
  REQUIRE(method.size() == 1);
  CHECK(method[0].problem == "method calls are not supported");
  CHECK(method[0].hint == "to loop over the lines of a text, write foreach: {lines: \"{{files}}\"}");
  CHECK(method[0].source_text == "{{files.split(");  // stops before a quote a YAML scalar may escape

  const auto call = find_template_flaws("seq {{range(n)}}");
  REQUIRE(call.size() == 1);
  CHECK(call[0].begin == 4);
  CHECK(call[0].problem == "function calls are not supported");

  const auto unclosed = find_template_flaws("a {{x and {{y}}");
  REQUIRE(unclosed.size() == 1);
  CHECK(unclosed[0].begin == 2);
  CHECK(unclosed[0].text == "{{x and");
  CHECK(unclosed[0].problem == "no `}}` closes it");

  CHECK(find_template_flaws("{{#if x}}")[0].problem.starts_with("blocks and other template languages"));
  CHECK(find_template_flaws("{{}}")[0].problem == "the braces are empty");
  CHECK(find_template_flaws("{{ a b }}")[0].problem == "it is not a path (expressions are not supported)");
  CHECK(find_template_flaws("{{a} {{b}").size() == 2);
}

TEST_CASE("references, single braces and braces around a reference are no flaws", "[template-syntax]") {
  for (const auto* text : {"{{a}} {{ b.c[0] }} {{d['e f']}}", "{{{x}}}", "{{{{x}}}}", "awk '{print $1}'", "${x}",
                           "{ {a} }", "no braces", "", "}}{{x}}"})
    CHECK(find_template_flaws(text).empty());
}

TEST_CASE("validate warns at the exact column of a malformed {{ inside a scalar, with a caret and a suggestion", "[template-syntax]") {
  std::vector<arun::severity> levels;
  const auto ds = rendered("name: x\ncontext:\n  rounds: 3\n  name: a\nsteps:\n  - id: a\n    command: |\n      echo start\n"
                           "      echo \"{{rounds} rounds\" # not {{ in a comment\n"
                           "    env:\n      A: \"{{ name | upper }}\"\n      B: \"x {{ name | upper }}\"\n",
                           "template-syntax", &levels);
  REQUIRE(ds.size() == 3);
  CHECK(ds[0] ==
        "r.yaml:9:13: warning: `{{rounds}` in the command of step 'a' is not a reference: a `}` is missing (a reference "
        "ends with `}}`)\n"
        "  |\n"
        "9 |       echo \"{{rounds} rounds\" # not {{ in a comment\n"
        "  |             ^^^^^^^^^\n"
        "  = help: write {{rounds}}\n");
  CHECK(ds[1].starts_with("r.yaml:11:11: warning: `{{ name | upper }}` in the env of step 'a' is not a reference: filters "
                          "are not supported\n"));
  CHECK(ds[2].starts_with("r.yaml:12:13: warning:"));  // the second env value's own occurrence
  CHECK(levels == std::vector<arun::severity>(3, arun::severity::warning));
}

TEST_CASE("validate refuses a foreach whose text can only render to itself and is no list", "[template-syntax]") {
  std::vector<arun::severity> levels;
  const auto ds = rendered("name: x\nsteps:\n  - id: list\n    command: ls\n    output: files\n"
                           "  - id: each\n    foreach: \"{{files.split('\\n')}}\"\n    command: echo {{item}}\n",
                           "foreach-items", &levels);
  REQUIRE(ds.size() == 1);
  CHECK(levels == std::vector{arun::severity::error});
  CHECK(ds[0] ==
        "r.yaml:7:15: error: foreach of step 'each' would get the text `{{files.split('\\n')}}`, which is not a list: "
        "it is not a reference (method calls are not supported)\n"
        "  |\n"
        "7 |     foreach: \"{{files.split('\\n')}}\"\n"
        "  |               ^^^^^^^^^^^^^^\n"
        "  = help: to loop over the lines of a text, write foreach: {lines: \"{{files}}\"}\n");
  // Said once: no second warning for the same text.
  CHECK(rendered("name: x\nsteps:\n  - id: each\n    foreach: \"{{range(3)}}\"\n    command: echo\n", "template-syntax").empty());
  CHECK(rendered("name: x\nsteps:\n  - id: each\n    foreach: \"a b c\"\n    command: echo\n", "foreach-items").size() == 1);
  // A JSON list, a reference, and the lines form are fine.
  for (const auto* items : {"'[\"a\", 2]'", "\"{{files}}\"", "'[\"{{files}}\"]'", "{lines: \"{{files}}\"}", "[a, b]"})
    CHECK(rendered(std::string("name: x\ncontext:\n  files: [a]\nsteps:\n  - id: each\n    foreach: ") + items +
                       "\n    command: echo\n",
                   "foreach-items")
              .empty());
}

TEST_CASE("foreach {lines: TEXT} loads as a lines loop, and other mappings are refused", "[template-syntax]") {
  const auto ok = io::load_recipe_text("name: x\nsteps:\n  - id: each\n    foreach: {lines: \"{{files}}\"}\n    command: echo\n", "r.yaml");
  REQUIRE(ok.value);
  const auto& fe = *ok.value->steps.at(0).foreach;
  REQUIRE(arun::engine::lines_text(fe.items));
  CHECK(*arun::engine::lines_text(fe.items) == "{{files}}");
  for (const auto* bad : {"{lines: [a]}", "{line: x}", "{lines: x, as: y}"}) {
    const auto r = io::load_recipe_text(std::string("name: x\nsteps:\n  - id: each\n    foreach: ") + bad + "\n    command: echo\n", "r.yaml");
    INFO(bad);
    CHECK_FALSE(r.value);
  }
}

TEST_CASE("the lines of a text: CRLF, blank lines and a trailing newline give no item, other lines stay exact", "[template-syntax]") {
  CHECK(lines_of("a\nb\n") == boost::json::parse(R"(["a","b"])"));
  CHECK(lines_of("a\r\nb\r\n") == boost::json::parse(R"(["a","b"])"));
  CHECK(lines_of("\n\na\n\n  \n\t\r\n b c \n") == boost::json::parse(R"(["a"," b c "])"));
  CHECK(lines_of("last without newline") == boost::json::parse(R"(["last without newline"])"));
  CHECK(lines_of("").empty());
  CHECK(lines_of("\n\r\n").empty());
  using arun::engine::foreach_lines;
  CHECK(std::get<boost::json::array>(foreach_lines(boost::json::value(nullptr))).empty());
  CHECK(std::get<boost::json::array>(foreach_lines(boost::json::value(42))) == boost::json::parse(R"(["42"])"));
  CHECK(std::get<std::string>(foreach_lines(boost::json::parse("[1]"))).find("got a list") != std::string::npos);
}

TEST_CASE("a lines loop runs one iteration per non-blank line of the rendered text, none for an empty one", "[template-syntax]") {
  auto loop = [](const boost::json::value& text) {
    arun::test::fake_runner runner;
    arun::test::recorder events;
    arun::step s;
    s.id = "fan";
    s.command = "out:{{item}}";
    arun::foreach_spec f;
    f.items = boost::json::object{{"lines", "{{files}}"}};
    f.collect = "all";
    s.foreach = f;
    auto r = arun::test::make({s});
    r.context["files"] = text;
    arun::run_options o;
    o.session_id = "sid";
    arun::recipe_engine eng(runner, events);
    auto result = arun::test::run_sync(eng.run(r, std::move(o)));
    return std::pair{result, runner.calls.size()};
  };
  const auto [two, calls] = loop("x\r\n\n  \ny\n");
  REQUIRE(two.status == arun::run_status::completed);
  CHECK(calls == 2);
  CHECK(two.context.at("all") == boost::json::parse(R"(["x","y"])"));
  const auto [none, no_calls] = loop("");
  CHECK(none.status == arun::run_status::completed);
  CHECK(none.step_results.at(0).status == arun::step_status::skipped);
  CHECK(no_calls == 0);
  const auto [refused, never] = loop(boost::json::array{"a"});
  CHECK(refused.status == arun::run_status::failed);
  CHECK(refused.step_results.at(0).error.find("needs a text, got a list") != std::string::npos);
  CHECK(never == 0);
}
