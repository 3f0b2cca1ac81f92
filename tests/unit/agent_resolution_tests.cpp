// Agent resolution (docs/agents.md, "Resolution order") on small trees in a temp directory, with an
// injected environment so no test reads the real ARUN_AGENT_* variables.
#include <catch2/catch.hpp>

#include "agents/agent_checks.hpp"
#include "agents/agent_resolution.hpp"
#include "recipe/recipe_loader.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <map>

namespace fs = std::filesystem;
using namespace arun::io;

namespace {

struct agent_tree : arun::test::temp_dir {
  std::map<std::string, std::string> env;
  agent_tree() : arun::test::temp_dir("arun-agents") {}
  agent_search search(std::vector<std::string> dirs = {}) const {
    agent_search s;
    s.agent_dirs = std::move(dirs);
    s.working_dir = (root / "wd").string();
    s.home = (root / "home").string();
    s.recipe_dir = (root / "recipes").string();
    s.getenv = [this](const char* name) -> const char* {
      const auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    };
    return s;
  }
  std::string path(const std::string& rel) const { return fs::canonical(root / rel).string(); }
};

// The path of the agent `reference` resolves to, or "error: ..." .
std::string where(std::string_view reference, const agent_search& s) {
  auto r = resolve_agent(reference, s);
  if (const auto* e = std::get_if<std::string>(&r)) return "error: " + *e;
  return std::get<resolved_agent>(r).path;
}

}  // namespace

TEST_CASE("each agent place beats the later ones") {
  agent_tree t;
  const std::vector<std::string> places = {"extra", "wd/.amplifier/agents", "wd/.claude/agents",
                                           "wd/amplifier-bundle/agents", "home/.amplifier/agents",
                                           "home/.amplihack/.claude/agents", "recipes/agents"};
  for (const auto& p : places) t.write(p + "/who.md", p);
  const auto s = t.search({(t.root / "extra").string()});
  for (const auto& p : places) {
    INFO(p);
    CHECK(where("who", s) == t.path(p + "/who.md"));
    fs::remove(t.root / p / "who.md");
  }
  CHECK_THAT(where("who", s), Catch::StartsWith("error: agent 'who' not found"));
}

TEST_CASE("the sources name where an agent was found") {
  agent_tree t;
  t.write("wd/.claude/agents/a.md", "x");
  t.write("home/.amplihack/.claude/agents/b.md", "x");
  t.write("extra/c.md", "x");
  const auto extra = (t.root / "extra").string();
  const auto s = t.search({extra});
  CHECK(std::get<resolved_agent>(resolve_agent("a", s)).source == ".claude/agents");
  CHECK(std::get<resolved_agent>(resolve_agent("b", s)).source == "~/.amplihack/.claude/agents");
  CHECK(std::get<resolved_agent>(resolve_agent("c", s)).source == "--agent-dir " + extra);
  t.write("recipes/agents/d.md", "x");
  CHECK(std::get<resolved_agent>(resolve_agent("d", s)).source == "agents/ beside the recipe");
}

TEST_CASE("ARUN_AGENT_ and then AMPLIFIER_AGENT_ override every directory") {
  agent_tree t;
  t.write("extra/ns/my-agent.md", "from dir");
  const auto arun_file = t.write("elsewhere/a.md", "from ARUN");
  const auto amp_file = t.write("elsewhere/b.md", "from AMPLIFIER");
  const auto s = t.search({(t.root / "extra").string()});
  CHECK(agent_env_suffix("ns:my-agent") == "NS_MY_AGENT");
  CHECK(where("ns:my-agent", s) == t.path("extra/ns/my-agent.md"));
  t.env["AMPLIFIER_AGENT_NS_MY_AGENT"] = amp_file;
  auto r = std::get<resolved_agent>(resolve_agent("ns:my-agent", s));
  CHECK(r.system_prompt == "from AMPLIFIER");
  CHECK(r.source == "env AMPLIFIER_AGENT_NS_MY_AGENT");
  t.env["ARUN_AGENT_NS_MY_AGENT"] = arun_file;
  r = std::get<resolved_agent>(resolve_agent("ns:my-agent", s));
  CHECK(r.system_prompt == "from ARUN");
  CHECK(r.source == "env ARUN_AGENT_NS_MY_AGENT");
}

TEST_CASE("an override naming no regular file is an error naming the variable") {
  agent_tree t;
  t.write("wd/.claude/agents/x.md", "x");
  t.env["ARUN_AGENT_X"] = (t.root / "missing.md").string();
  CHECK_THAT(where("x", t.search()), Catch::Contains("ARUN_AGENT_X=") && Catch::Contains("does not name a regular file"));
  t.env["ARUN_AGENT_X"] = t.root.string();  // a directory
  CHECK_THAT(where("x", t.search()), Catch::Contains("ARUN_AGENT_X="));
}

TEST_CASE("agent-dir directories are searched in the order given") {
  agent_tree t;
  t.write("one/a.md", "1");
  t.write("two/a.md", "2");
  t.write("two/b.md", "2");
  const auto one = (t.root / "one").string(), two = (t.root / "two").string();
  CHECK(where("a", t.search({one, two})) == t.path("one/a.md"));
  CHECK(where("a", t.search({two, one})) == t.path("two/a.md"));
  CHECK(where("b", t.search({one, two})) == t.path("two/b.md"));
}

TEST_CASE("ns:cat:name tries ns/cat/name then cat/name then ns/name then name") {
  agent_tree t;
  std::string error;
  CHECK(agent_candidates("ns:cat:name", error) ==
        std::vector<std::string>{"ns/cat/name.md", "cat/name.md", "ns/name.md", "name.md"});
  CHECK(agent_candidates("ns:name", error) ==
        std::vector<std::string>{"ns/name.md", "ns/core/name.md", "ns/specialized/name.md", "name.md"});
  CHECK(agent_candidates("name", error) == std::vector<std::string>{"name.md"});
  const std::vector<std::string> files = {"d/ns/cat/name.md", "d/cat/name.md", "d/ns/name.md", "d/name.md"};
  for (const auto& f : files) t.write(f, f);
  const auto s = t.search({(t.root / "d").string()});
  for (const auto& f : files) {
    INFO(f);
    CHECK(where("ns:cat:name", s) == t.path(f));
    fs::remove(t.root / f);
  }
}

TEST_CASE("a bad reference segment is named in the error") {
  agent_tree t;
  CHECK_THAT(where("ns:../x", t.search()), Catch::Contains("segment '../x' must be"));
  CHECK_THAT(where("ns::x", t.search()), Catch::Contains("segment '' must be"));
  CHECK_THAT(where("a b", t.search()), Catch::Contains("segment 'a b' must be"));
  CHECK_THAT(where("", t.search()), Catch::Contains("segment '' must be"));
  CHECK_THAT(where("a:b:c:d", t.search()), Catch::Contains("has 4 segments"));
  CHECK(where("Ok_name-2", t.search()).find("not found") != std::string::npos);
}

TEST_CASE("a symlink leading outside its agent directory is refused and the search goes on") {
  agent_tree t;
  const auto outside = t.write("outside/evil.md", "evil");
  fs::create_directories(t.root / "extra");
  fs::create_symlink(outside, t.root / "extra/evil.md");
  const auto s = t.search({(t.root / "extra").string()});
  const auto refused = where("evil", s);
  CHECK_THAT(refused, Catch::Contains("not found") && Catch::Contains("refused " + (t.root / "extra/evil.md").string()));
  t.write("wd/.claude/agents/evil.md", "fine");
  CHECK(where("evil", s) == t.path("wd/.claude/agents/evil.md"));
  // A symlink that stays inside the directory is followed.
  t.write("extra/real.md", "real");
  fs::create_symlink(t.root / "extra/real.md", t.root / "extra/alias.md");
  CHECK(where("alias", s) == t.path("extra/real.md"));
}

TEST_CASE("front matter is parsed with YAML 1.2 typing and the body is the system prompt") {
  agent_tree t;
  t.write("wd/.claude/agents/rev.md",
          "---\nmodel: opus\ndescription: Reviews code\ntemperature: 0.5\nstrict: yes\n---\nYou review code.\n\nCarefully.\n");
  const auto a = std::get<resolved_agent>(resolve_agent("rev", t.search()));
  CHECK(a.reference == "rev");
  CHECK(a.front_matter.at("model") == "opus");
  CHECK(a.front_matter.at("description") == "Reviews code");
  CHECK(a.front_matter.at("temperature") == 0.5);
  CHECK(a.front_matter.at("strict") == "yes");
  CHECK(a.system_prompt == "You review code.\n\nCarefully.\n");
}

TEST_CASE("a file without front matter is all body") {
  const auto a = std::get<resolved_agent>(parse_agent_file("Just a prompt.\n---\nmore\n", "f.md"));
  CHECK(a.front_matter.empty());
  CHECK(a.system_prompt == "Just a prompt.\n---\nmore\n");
  const auto crlf = std::get<resolved_agent>(parse_agent_file("---\r\nmodel: m\r\n---\r\nbody\r\n", "f.md"));
  CHECK(crlf.front_matter.at("model") == "m");
  CHECK(crlf.system_prompt == "body\r\n");
  const auto empty = std::get<resolved_agent>(parse_agent_file("---\n---\nbody", "f.md"));
  CHECK(empty.front_matter.empty());
  CHECK(empty.system_prompt == "body");
}

TEST_CASE("invalid front matter is an error with the file and line") {
  auto bad = parse_agent_file("---\nmodel: opus\ndescription: [unclosed\n---\nbody\n", "/a/rev.md");
  REQUIRE(std::holds_alternative<std::string>(bad));
  CHECK_THAT(std::get<std::string>(bad), Catch::StartsWith("/a/rev.md:") && Catch::Contains("invalid YAML front matter"));
  bad = parse_agent_file("---\nmodel: a\n  bad: indent\n---\n", "/a/rev.md");
  CHECK_THAT(std::get<std::string>(bad), Catch::StartsWith("/a/rev.md:3:"));
  bad = parse_agent_file("---\n- a list\n---\n", "/a/rev.md");
  CHECK(std::get<std::string>(bad) == "/a/rev.md:2:1: front matter must be a mapping (key: value lines)");
  bad = parse_agent_file("---\nmodel: a\n", "/a/rev.md");
  CHECK_THAT(std::get<std::string>(bad), Catch::Contains("not closed"));
}

TEST_CASE("not found lists the files, the directories and the variables") {
  agent_tree t;
  const auto extra = (t.root / "extra").string();
  const auto e = where("ns:ghost", t.search({extra}));
  CHECK_THAT(e, Catch::Contains("agent 'ns:ghost' not found (looked for ns/ghost.md, ns/core/ghost.md, "
                                "ns/specialized/ghost.md, ghost.md in " + extra + ", "));
  CHECK_THAT(e, Catch::Contains((t.root / "wd/.amplifier/agents").string()));
  CHECK_THAT(e, Catch::Contains((t.root / "home/.amplihack/.claude/agents").string()));
  CHECK_THAT(e, Catch::Contains("ARUN_AGENT_NS_GHOST and AMPLIFIER_AGENT_NS_GHOST are unset"));
}

TEST_CASE("list_agents rebuilds references and marks shadowed agents") {
  agent_tree t;
  t.write("extra/top.md", "---\ndescription: first\n---\n");
  t.write("extra/ns/b.md", "b");
  t.write("extra/ns/cat/c.md", "c");
  t.write("extra/ns/cat/too/deep.md", "deep");
  t.write("extra/notes.txt", "not an agent");
  t.write("extra/bad name.md", "not a reference");
  t.write("wd/.claude/agents/top.md", "---\ndescription: second\n---\n");
  t.write("wd/.claude/agents/broken.md", "---\n[\n---\n");
  const auto agents = list_agents(t.search({(t.root / "extra").string()}));
  std::vector<std::string> refs;
  for (const auto& a : agents) refs.push_back(a.reference + (a.shadowed ? " shadowed" : ""));
  CHECK(refs == std::vector<std::string>{"ns:b", "ns:cat:c", "top", "broken", "top shadowed"});
  REQUIRE(agents.size() == 5);
  CHECK(agents[2].description == "first");
  CHECK(agents[2].path == t.path("extra/top.md"));
  CHECK(agents[4].description == "second");
  CHECK(agents[4].source == ".claude/agents");
  CHECK_THAT(agents[3].error, Catch::Contains("invalid YAML front matter"));
}

TEST_CASE("check_agent_references reports unresolved agents at the agent key") {
  agent_tree t;
  t.write("wd/.claude/agents/ns/known.md", "k");
  const auto file = t.write("r.yaml",
                            "name: r\nsteps:\n  - id: a\n    agent: ns:known\n    prompt: p\n"
                            "  - id: b\n    agent: ns:ghost\n    prompt: p\n"
                            "  - id: c\n    agent: \"{{ who }}\"\n    prompt: p\n");
  const auto loaded = load_recipe_file(file);
  REQUIRE(loaded.value);
  auto ds = check_agent_references(*loaded.value, t.search(), false);
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].level == arun::severity::error);
  CHECK(ds[0].where.line == 7);
  CHECK(ds[0].where.column == 12);
  CHECK_THAT(ds[0].message, Catch::StartsWith("step 'b': agent 'ns:ghost' not found"));
  ds = check_agent_references(*loaded.value, t.search(), true);
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].level == arun::severity::warning);
}

TEST_CASE("ns:name also finds amplihack's layout: ns/core/name and ns/specialized/name") {
  agent_tree t;
  t.write("wd/.claude/agents/amplihack/core/architect.md", "core");
  t.write("wd/.claude/agents/amplihack/specialized/fixer.md", "specialized");
  const auto s = t.search();
  CHECK(where("amplihack:architect", s) == t.path("wd/.claude/agents/amplihack/core/architect.md"));
  CHECK(where("amplihack:fixer", s) == t.path("wd/.claude/agents/amplihack/specialized/fixer.md"));
  // ns/name.md comes first.
  t.write("wd/.claude/agents/amplihack/architect.md", "top");
  CHECK(where("amplihack:architect", s) == t.path("wd/.claude/agents/amplihack/architect.md"));
}

TEST_CASE("an agent step must run only at the top level, unconditioned, untagged, unlooped, failing the run, uncached, here") {
  auto must_run = [](const std::string& steps, bool tag_filter = false, bool here = true) {
    auto loaded = load_recipe_text("name: x\nsteps:\n" + steps, "r.yaml");
    REQUIRE(loaded.value);
    const auto* s = agent_step_that_must_run(*loaded.value, tag_filter, here);
    return s ? s->id : std::string();
  };
  const std::string ask = "  - id: ask\n    prompt: hi\n";
  CHECK(must_run("  - id: a\n    command: x\n" + ask) == "ask");
  CHECK(must_run(ask, true).empty());                 // --include-tags may leave it out
  CHECK(must_run(ask, false, false).empty());         // --executor slurm: the nodes may have the CLI
  CHECK(must_run(ask + "    executor: local\n", false, false) == "ask");
  CHECK(must_run(ask + "    condition: \"true\"\n").empty());
  CHECK(must_run(ask + "    when_tags: [ai]\n").empty());
  CHECK(must_run(ask + "    on_error: continue\n").empty());
  CHECK(must_run(ask + "    cache: true\n").empty());  // a warm cache starts no CLI
  CHECK(must_run("  - id: fan\n    foreach: '[1]'\n    prompt: hi {{item}}\n").empty());
  CHECK(must_run("  - id: a\n    command: x\n").empty());
}
