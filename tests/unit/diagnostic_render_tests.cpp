// Diagnostics rendered like a compiler's: the line, the source line, the underline, help,
// sorted, counted; pointing at a reference inside block scalars and env values.
#include <catch2/catch.hpp>

#include "output/diagnostic_render.hpp"
#include "temp_dir.hpp"

#include <arun/recipe.hpp>

using namespace arun;
using namespace arun::io;

namespace {

diagnostic at(std::string file, int line, int column, std::string message, std::string hint = {},
              severity level = severity::error) {
  diagnostic d;
  d.level = level;
  d.where = {std::move(file), line, column};
  d.message = std::move(message);
  d.hint = std::move(hint);
  return d;
}

}  // namespace

TEST_CASE("a diagnostic shows its source line, an underline under the token and a help line") {
  const std::string source = "name: x\nsteps:\n  - id: a\n    comand: echo hi\n";
  CHECK(render_diagnostic(at("r.yaml", 4, 5, "unknown key 'comand'", "did you mean 'command'?", severity::warning),
                          &source, false) ==
        "r.yaml:4:5: warning: unknown key 'comand'\n"
        "  |\n"
        "4 |     comand: echo hi\n"
        "  |     ^^^^^^\n"
        "  = help: did you mean 'command'?\n");
  // A quoted value is underlined to its closing quote; an explicit span wins.
  const std::string quoted = "a: \"x y\" z\n";
  CHECK(render_diagnostic(at("q.yaml", 1, 4, "bad"), &quoted, false) == "q.yaml:1:4: error: bad\n  |\n1 | a: \"x y\" z\n  |    ^^^^^\n");
  auto spanned = at("q.yaml", 1, 4, "bad");
  spanned.span = 2;
  CHECK(render_diagnostic(spanned, &quoted, false).ends_with("  |    ^^\n"));
  // Without the source (or without a line), the first line and help only.
  CHECK(render_diagnostic(at("--set", 0, 0, "bad value", "use KEY=VALUE"), nullptr, false) ==
        "--set: error: bad value\nhelp: use KEY=VALUE\n");
}

TEST_CASE("the underline lines up under tabs and multi-byte characters") {
  const std::string source = "\tcommand: \xc3\xa9\xc3\xa9 {{x}}\n";
  auto d = at("t.yaml", 1, 16, "undefined");  // byte column of "{{x}}"
  d.span = 5;
  CHECK(render_diagnostic(d, &source, false) ==
        "t.yaml:1:16: error: undefined\n"
        "  |\n"
        "1 |     command: \xc3\xa9\xc3\xa9 {{x}}\n"
        "  |                 ^^^^^\n");
}

TEST_CASE("colour marks the level, the gutter and the underline only when asked") {
  const std::string source = "a: b\n";
  const auto plain = render_diagnostic(at("c.yaml", 1, 4, "bad"), &source, false);
  const auto coloured = render_diagnostic(at("c.yaml", 1, 4, "bad"), &source, true);
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(coloured.find("\x1b[1;31merror\x1b[0m") != std::string::npos);
  CHECK(coloured.find("\x1b[1;31m^\x1b[0m") != std::string::npos);
}

TEST_CASE("references are pointed at inside block scalars and env values, each occurrence its own") {
  arun::test::temp_dir dir("arun-render");
  const auto file = dir.write("r.yaml",
                              "name: x\n"
                              "steps:\n"
                              "  - id: a\n"
                              "    command: |\n"
                              "      echo start\n"
                              "      echo {{greting}} {{greting}}\n"
                              "    env:\n"
                              "      ONE: \"{{nme}}\"\n"
                              "      TWO: \"{{nme}}\"\n");
  std::vector<diagnostic> ds;
  for (std::size_t n = 0; n < 2; ++n) {
    auto d = at(file, 4, 14, "undefined 'greting'");  // the value starts at the `|`
    d.snippet = "{{greting}}";
    d.occurrence = n;
    ds.push_back(d);
  }
  auto env = at(file, 8, 7, "undefined 'nme'");  // the env mapping, at its first key
  env.snippet = "{{nme}}";
  env.occurrence = 1;  // the second env value's
  ds.push_back(env);
  source_files files;
  point_at_snippets(ds, files);
  CHECK(ds[0].where.line == 6);
  CHECK(ds[0].where.column == 12);
  CHECK(ds[1].where.column == 24);
  CHECK(ds[0].span == 11);
  CHECK(ds[2].where.line == 9);
  CHECK(ds[2].where.column == 13);
  // Only inside the value: text of a later key (less indented) is never taken for it.
  auto plain = at(file, 6, 12, "undefined 'nme'");  // a value on line 6; {{nme}} is only in env below
  plain.snippet = "{{nme}}";
  std::vector<diagnostic> bounded = {plain};
  point_at_snippets(bounded, files);
  CHECK(bounded[0].where.line == 6);
  CHECK(bounded[0].where.column == 12);
  // Not in the source as written: the value's start stays.
  auto missing = at(file, 4, 14, "x");
  missing.snippet = "{{elsewhere}}";
  std::vector<diagnostic> one = {missing};
  point_at_snippets(one, files);
  CHECK(one[0].where.line == 4);
}

TEST_CASE("diagnostics come sorted by file and position with a count at the end") {
  source_files files;
  const auto text = render_diagnostics({at("b.yaml", 1, 1, "third"), at("a.yaml", 9, 1, "second", {}, severity::warning),
                                        at("a.yaml", 2, 5, "first")},
                                       files, false);
  CHECK(text == "a.yaml:2:5: error: first\na.yaml:9:1: warning: second\nb.yaml:1:1: error: third\n2 errors, 1 warning\n");
  CHECK(render_diagnostics({}, files, false).empty());
}
