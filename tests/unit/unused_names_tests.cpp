// Names given to arun that nothing uses (docs/running.md, "Names nothing uses"), and the
// undeclared names of conditions: a likely typo is an error, a name nothing resembles a
// warning (a sub-recipe fragment's caller may provide it).
#include <catch2/catch.hpp>

#include "recipe/recipe_loader.hpp"

#include <arun/unused_names.hpp>
#include <arun/validation.hpp>

#include <string>
#include <vector>

using arun::io::load_recipe_text;

namespace {

struct checked {
  std::vector<arun::diagnostic> all;
  std::vector<std::string> text;  ///< each formatted
};

// Load, validate and check the names as `arun validate` / `arun run` do.
checked check(const std::string& yaml, const std::vector<std::string>& sets = {},
              const std::vector<std::string>& limit_options = {}) {
  auto loaded = load_recipe_text(yaml, "r.yaml");
  REQUIRE(loaded.value);
  arun::validation_options vo;
  for (const auto& k : sets) vo.set_keys.insert(k);
  boost::json::object written = loaded.value->context;
  for (const auto& k : sets) loaded.value->context[k] = "given";  // what --set does before validation
  checked out;
  out.all = arun::validate_recipe(*loaded.value, vo);
  arun::name_use u;
  u.top = &*loaded.value;
  u.declared = arun::declared_names(*loaded.value, vo);
  u.set_keys = sets;
  u.context_before_set = &written;
  u.limit_options = limit_options;
  u.providers = {"claude", "codex", "copilot", "fake"};
  for (auto& d : arun::unused_name_diagnostics(u)) out.all.push_back(std::move(d));
  for (const auto& d : out.all) out.text.push_back(arun::format_diagnostic(d));
  return out;
}

const std::string fleet = "name: x\nlimits:\n  claude: 2\n  fakee: 3\n  github-api: 1\nsteps:\n"
                          "  - id: a\n    command: echo\n    limit_group: github-api\n";

}  // namespace

TEST_CASE("a limits key that is no provider and no limit_group warns with the nearest name, at the key") {
  const auto c = check(fleet);
  REQUIRE(c.text.size() == 1);
  // At the mapping, with the key as the snippet a renderer points at (the e2e tests see 4:3).
  CHECK(c.text[0] ==
        "r.yaml:3:3: warning: 'limits' names 'fakee', which is no agent provider and no step's limit_group: it limits "
        "nothing (did you mean 'fake'?)");
  CHECK(c.all[0].snippet == "fakee");
  CHECK(c.all[0].code == "unused-name");
  CHECK(c.all[0].level == arun::severity::warning);
  // Nothing near: the help lists what a limit can name.
  const auto far = check("name: x\nlimits: {zzzzzz: 3}\nsteps:\n  - id: a\n    command: echo\n");
  REQUIRE(far.text.size() == 1);
  CHECK(far.text[0] == "r.yaml:2:9: warning: 'limits' names 'zzzzzz', which is no agent provider and no step's "
                       "limit_group: it limits nothing (a limit names an agent provider or a step's limit_group "
                       "(known here: claude, codex, copilot, fake); give a step 'limit_group: zzzzzz' to put it "
                       "under this limit)");
  // A limit group of a called sub-recipe counts.
  auto top = load_recipe_text("name: x\nlimits: {tracker: 2}\nsteps:\n  - id: a\n    recipe: child.yaml\n", "r.yaml");
  auto child = load_recipe_text("name: c\nsteps:\n  - id: b\n    command: x\n    limit_group: tracker\n", "c.yaml");
  REQUIRE((top.value && child.value));
  arun::name_use u;
  u.top = &*top.value;
  u.providers = {"claude"};
  CHECK(arun::unused_name_diagnostics(u).size() == 1);
  u.called = {&*child.value};
  CHECK(arun::unused_name_diagnostics(u).empty());
}

TEST_CASE("a --limit NAME that is no provider and no limit_group warns, naming the option") {
  const auto c = check("name: x\nsteps:\n  - id: a\n    command: echo\n", {}, {"fak", "claude", "fak"});
  REQUIRE(c.text.size() == 1);  // once, however often it was given
  CHECK(c.text[0] == "--limit: warning: --limit fak: no agent provider and no step's limit_group is named 'fak': it "
                     "limits nothing (did you mean 'fake'?)");
  CHECK(c.all[0].code == "unused-name");
  // A provider the caller names (the run's own --agent-command program) is one.
  auto r = load_recipe_text("name: x\nsteps:\n  - id: a\n    command: echo\n", "r.yaml");
  REQUIRE(r.value);
  arun::name_use u;
  u.top = &*r.value;
  u.limit_options = {"my-agent"};
  CHECK(arun::unused_name_diagnostics(u).size() == 1);
  u.providers = {"my-agent"};
  CHECK(arun::unused_name_diagnostics(u).empty());
}

TEST_CASE("a --set KEY the recipe never reads warns with a name it reads") {
  const std::string hello = "name: x\ncontext:\n  who: world\nsteps:\n  - id: a\n    command: echo hello {{who}}\n";
  const auto c = check(hello, {"whom"});
  REQUIRE(c.text.size() == 1);
  CHECK(c.text[0] == "--set: warning: --set whom: the recipe reads no 'whom' (did you mean 'who'?)");
  CHECK(c.all[0].level == arun::severity::warning);
  CHECK(c.all[0].code == "unused-name");
  // A declared context key, a reference, a condition's bare name, $RECIPE_VAR_x, a
  // context_validation key: each is read.
  CHECK(check(hello, {"who"}).text.empty());
  CHECK(check("name: x\nsteps:\n  - id: a\n    command: echo {{whom}}\n", {"whom"}).text.empty());
  CHECK(check("name: x\nsteps:\n  - id: a\n    command: echo\n    condition: whom == 'x'\n", {"whom"}).text.empty());
  CHECK(check("name: x\nsteps:\n  - id: a\n    command: echo \"$RECIPE_VAR_whom\"\n", {"whom"}).text.empty());
  CHECK(check("name: x\ncontext_validation: {whom: nonempty}\nsteps:\n  - id: a\n    command: echo\n", {"whom"})
            .text.empty());
  CHECK(check("name: x\ninputs: {whom: a name}\nsteps:\n  - id: a\n    command: echo\n", {"whom"}).text.empty());
  // Nothing near: the help says what would have read it.
  const auto far = check(hello, {"zzzz"});
  REQUIRE(far.text.size() == 1);
  CHECK(far.text[0] == "--set: warning: --set zzzz: the recipe reads no 'zzzz' (no {{zzzz}}, condition or context "
                       "key names it; a program a step starts may still read $RECIPE_VAR_zzzz)");
}

TEST_CASE("a top-level output naming no variable warns with the nearest output") {
  const auto c = check("name: x\noutput: reslt\nsteps:\n  - id: a\n    command: echo\n    output: result\n");
  REQUIRE(c.text.size() == 1);
  CHECK(c.text[0] == "r.yaml:1:1: warning: the recipe's output 'reslt' names no step output or context variable: the "
                     "run's output would be null (did you mean 'result'?)");
  CHECK(c.all[0].snippet == "output: reslt");
  CHECK(c.all[0].code == "unused-name");
  CHECK(check("name: x\noutput: result\nsteps:\n  - id: a\n    command: echo\n    output: result\n").text.empty());
  CHECK(check("name: x\noutput: {type: string}\nsteps:\n  - id: a\n    command: echo\n").text.empty());
  // A recipe that calls a recipe chosen at run time may get the name from it.
  auto r = load_recipe_text("name: x\noutput: reslt\nsteps:\n  - id: a\n    command: echo\n", "r.yaml");
  REQUIRE(r.value);
  arun::name_use u;
  u.top = &*r.value;
  CHECK(arun::unused_name_diagnostics(u).size() == 1);
  u.dynamic_calls = true;
  CHECK(arun::unused_name_diagnostics(u).empty());
}

TEST_CASE("a depends_on naming no step is an error with the nearest id") {
  const auto c = check("name: x\nsteps:\n  - id: build-server\n    command: x\n  - id: test\n    command: y\n"
                       "    depends_on: [build-sever]\n");
  REQUIRE(c.text.size() == 1);
  CHECK(c.text[0] == "r.yaml:7:17: error: step 'test' depends on 'build-sever', which no step has as id (did you mean "
                     "'build-server'?)");
  CHECK(c.all[0].snippet == "build-sever");
}

TEST_CASE("an undeclared name in a condition: a likely typo is an error, a name nothing resembles a warning") {
  const auto typo = check("name: x\ncontext: {round: 1}\nsteps:\n  - id: a\n    command: x\n    condition: rounds > 2\n");
  REQUIRE(typo.text.size() == 1);
  CHECK(typo.text[0] == "r.yaml:6:16: error: undefined name 'rounds' in the condition of step 'a': it is null at run "
                        "time (did you mean 'round'?)");
  const auto caller = check("name: x\nsteps:\n  - id: a\n    command: x\n    condition: caller_flag\n");
  REQUIRE(caller.text.size() == 1);
  CHECK(caller.text[0] == "r.yaml:5:16: warning: undefined name 'caller_flag' in the condition of step 'a': null "
                          "unless a caller or --set provides it (declare it in context, or pass --set caller_flag=...)");
  CHECK(caller.all[0].code == "undefined-name");
  // An unquoted word compared with a value still says how to quote it.
  const auto word = check("name: x\ncontext:\n  mode: q\nsteps:\n  - id: a\n    command: x\n    condition: mode == zz\n");
  REQUIRE(word.text.size() == 1);
  CHECK(word.text[0] == "r.yaml:7:16: warning: undefined name 'zz' in the condition of step 'a': null unless a caller "
                        "or --set provides it (to compare with the text zz, quote it: 'zz')");
  // Compared with quoted text, an unknown word is a name to declare, not text to quote.
  CHECK(check("name: x\nsteps:\n  - id: a\n    command: x\n    condition: zzzz == 'q'\n").text.at(0) ==
        "r.yaml:5:16: warning: undefined name 'zzzz' in the condition of step 'a': null unless a caller or --set "
        "provides it (declare it in context, or pass --set zzzz=...)");
  // A short name is within two edits of almost any short name (a loop's `f`): a warning that
  // still names the near one, never a refusal.
  const auto short_name = check("name: x\nsteps:\n  - id: fan\n    foreach: '[1]'\n    as: f\n    command: x\n"
                                "  - id: a\n    command: x\n    condition: ci == true\n");
  REQUIRE(short_name.text.size() == 1);
  CHECK(short_name.text[0] == "r.yaml:9:16: warning: undefined name 'ci' in the condition of step 'a': null unless a "
                              "caller or --set provides it (did you mean 'f'?)");
  // The same in a while_condition.
  CHECK(check("name: x\nsteps:\n  - id: a\n    command: x\n    while_condition: not finished\n").text.at(0) ==
        "r.yaml:5:22: warning: undefined name 'finished' in the while_condition of step 'a': null unless a caller or "
        "--set provides it (declare it in context, or pass --set finished=...)");
}
