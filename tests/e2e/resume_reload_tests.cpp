// Resume after a fix (issue 14 item 6): `arun resume ID` warns about recipe files edited since
// the session started and runs its copies; `--reload` runs the edited files, keeping a
// recorded instance only when its step and the values it reads are unchanged (content keys in
// the journal), and the result says which were kept and which ran again.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

struct reload_project {
  arun::test::temp_dir dir{"arun-e2e-reload"};
  fs::path sessions = dir.root / "sessions";
  fs::path ran = dir.root / "ran.txt";  // each step appends its id when it runs

  std::string recipe(const std::string& one, const std::string& two, const std::string& three) const {
    return dir.write("three.yaml", "name: three\nsteps:\n"
                                   "  - id: one\n    command: echo one >> " + ran.string() + "; echo " + one +
                                       "\n    output: first\n"
                                   "  - id: two\n    command: echo two >> " + ran.string() + "; echo '" + two +
                                       " {{first}}'\n"
                                   "  - id: three\n    command: echo three >> " + ran.string() + "; echo " + three + "\n");
  }
  arun::test::arun_run arun(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string()});
    return run_arun(args, dir.root.string());
  }
  std::string session() const {
    std::string id;
    for (const auto& e : fs::directory_iterator(sessions)) id = e.path().filename().string();
    return id;
  }
  std::string runs() const { return read_text(ran); }
};

std::vector<std::string> strings(const boost::json::value& v) {
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) out.emplace_back(s.as_string());
  return out;
}

}  // namespace

TEST_CASE("reload: editing one step of a three-step recipe runs that step again and keeps the other two") {
  reload_project p;
  const auto recipe = p.recipe("v1", "two sees", "v1");
  REQUIRE(p.arun({recipe, "-q"}).exit_code == 0);
  const auto id = p.session();
  CHECK(p.runs() == "one\ntwo\nthree\n");
  // Every finished leaf instance is recorded with its content key.
  for (const auto& line : arun::test::read_json_lines(p.sessions / id / "journal.jsonl"))
    CHECK(line.at("key").as_string().size() == 16);

  p.recipe("v1", "two now sees", "v1");  // step two's command changes; its output is not read by three
  SECTION("without --reload: a warning names the file; a completed session has nothing to do") {
    const auto r = p.arun({"resume", id});
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("nothing to resume (after editing its recipe: arun resume " + id + " --reload)") !=
          std::string::npos);
    CHECK(p.runs() == "one\ntwo\nthree\n");
  }
  SECTION("--reload: two runs again, one and three are kept") {
    const auto r = p.arun({"resume", id, "--reload", "--output-format", "json"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(p.runs() == "one\ntwo\nthree\ntwo\n");
    const auto result = arun::test::result_json(r);
    CHECK(strings(result.at("reload").at("reused")) == std::vector<std::string>{"one", "three"});
    CHECK(strings(result.at("reload").at("changed")) == std::vector<std::string>{"two"});
    CHECK(result.at("step_results").at(1).at("output") == "two now sees v1");
    // The session now holds the edited recipe: a later resume sees no change.
    CHECK(read_text(p.sessions / id / "recipe.yaml") == read_text(recipe));
    const auto again = p.arun({"resume", id, "--reload", "-q"});
    CHECK(again.exit_code == 0);
    CHECK(again.out.find("reload: 3 kept as recorded (unchanged): one, two, three\n") != std::string::npos);
    CHECK(p.runs() == "one\ntwo\nthree\ntwo\n");
  }
  SECTION("--reload after editing the first step: what reads its output runs again too") {
    p.recipe("v2", "two sees", "v1");
    const auto r = p.arun({"resume", id, "--reload", "-q"});
    CHECK(r.exit_code == 0);
    CHECK(p.runs() == "one\ntwo\nthree\none\ntwo\n");
    CHECK(r.out.find("reload: 1 kept as recorded (unchanged): three; 2 run again (step or inputs changed): one, two\n") !=
          std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("reload: a failed run resumed without --reload warns about the edit and runs the session's copy") {
  reload_project p;
  auto recipe = p.recipe("v1", "two sees", "v1");
  {
    std::string text = read_text(recipe);
    text.replace(text.find("echo 'two sees {{first}}'"), 25, "echo broken; exit 1");
    std::ofstream(recipe) << text;
  }
  REQUIRE(p.arun({recipe, "-q"}).exit_code == 1);
  const auto id = p.session();
  p.recipe("v1", "two fixed", "v1");  // the fix
  const auto stale = p.arun({"resume", id, "-q"});
  CHECK(stale.exit_code == 1);  // the old copy fails again
  CHECK(stale.err.find("arun: warning: 1 recipe file changed since session " + id + " started:\n  " +
                       fs::weakly_canonical(recipe).string() + "\n") != std::string::npos);
  CHECK(stale.err.find("to run the edited files: arun resume " + id + " --reload") != std::string::npos);
  const auto fixed = p.arun({"resume", id, "--reload", "-q"});
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.out.find("reload: 1 kept as recorded (unchanged): one\n") != std::string::npos);
  CHECK(p.runs() == "one\ntwo\ntwo\ntwo\nthree\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("reload: a recorded failure runs again when the fix is outside the recipe (a script it runs)") {
  reload_project p;
  // The shards run a script; the recipe never changes, so no content key can see the fix.
  const auto script = p.dir.write("check.sh", "if [ \"$1\" = b ]; then echo broken >&2; exit 1; fi\necho ok \"$1\"\n");
  const auto recipe = p.dir.write("shards.yaml", "name: shards\nsteps:\n"
                                                 "  - id: shard\n    foreach: '[\"a\",\"b\",\"c\"]'\n    as: x\n"
                                                 "    on_error: continue\n"
                                                 "    command: echo '{{x}}' >> " + p.ran.string() + "; bash " +
                                                     script + " '{{x}}'\n");
  REQUIRE(p.arun({recipe, "-q"}).exit_code == 0);
  const auto id = p.session();
  CHECK(p.runs() == "a\nb\nc\n");
  p.dir.write("check.sh", "echo ok \"$1\"\n");  // the fix
  const auto r = p.arun({"resume", id, "--reload", "--output-format", "json"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(p.runs() == "a\nb\nc\nb\n");  // only the failure ran again; a and c were kept
  const auto result = arun::test::result_json(r);
  CHECK(strings(result.at("reload").at("failed")) == std::vector<std::string>{"shard[1]"});
  CHECK(strings(result.at("reload").at("reused")) == std::vector<std::string>{"shard[0]", "shard[2]"});
  CHECK(result.at("output") == boost::json::parse(R"(["ok a","ok b","ok c"])"));
}
