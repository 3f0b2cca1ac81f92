// `arun graph` draws the flow as it runs: parallel groups fan out and in, DAGs follow their
// dependencies, loops hold their body, skip edges lead to the next decision, stages carry their
// gates, `--expand` draws sub-recipes inside their calls; every shipped recipe's graph is
// accepted by Graphviz and connected from start to end.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "recipe/recipe_loader.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::run_arun;

namespace {

struct dot_edge {
  std::string from, to, label;
  bool dashed = false;
};

// The DOT arun writes, read back: nodes (id -> label, attributes), clusters, edges.
struct dot_graph {
  std::map<std::string, std::string> label, attrs;
  std::vector<std::string> clusters;
  std::vector<dot_edge> edges;

  explicit dot_graph(const std::string& text) {
    static const std::regex node(R"re(^\s*(\w+) \[label="((?:[^"\\]|\\.)*)", ([^\]]*)\];$)re");
    static const std::regex edge(R"re(^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$)re");
    static const std::regex cluster_label(R"re(^\s*label="((?:[^"\\]|\\.)*)";$)re");
    static const std::regex edge_label(R"re(label="((?:[^"\\]|\\.)*)")re");
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_match(line, m, node)) {
        label[m[1]] = m[2];
        attrs[m[1]] = m[3];
      } else if (std::regex_match(line, m, edge)) {
        dot_edge e{m[1], m[2], "", false};
        const std::string a = m[3];
        std::smatch l;
        if (std::regex_search(a, l, edge_label)) e.label = l[1];
        e.dashed = a.find("style=dashed") != std::string::npos;
        edges.push_back(e);
      } else if (std::regex_match(line, m, cluster_label)) {
        clusters.push_back(m[1]);
      }
    }
  }

  // The one node whose label starts with `prefix`.
  std::string node(const std::string& prefix) const {
    std::vector<std::string> found;
    for (const auto& [id, l] : label)
      if (l.rfind(prefix, 0) == 0) found.push_back(id);
    INFO("node labelled " << prefix);
    REQUIRE(found.size() == 1);
    return found.front();
  }

  // The labels of edges from -> to ("" for an unlabelled edge); empty when there is none.
  std::vector<std::string> between(const std::string& from, const std::string& to, bool dashed = false) const {
    std::vector<std::string> out;
    for (const auto& e : edges)
      if (e.from == from && e.to == to && e.dashed == dashed) out.push_back(e.label);
    return out;
  }
  bool linked(const std::string& from, const std::string& to, const std::string& with_label = "") const {
    const auto labels = between(from, to);
    return std::find(labels.begin(), labels.end(), with_label) != labels.end();
  }

  // Nodes reachable from `start` (forwards or backwards) along the flow: every edge but the
  // dashed `depends on` ones, which order nothing.
  std::set<std::string> reachable(const std::string& start, bool forwards) const {
    std::set<std::string> seen{start};
    std::vector<std::string> todo{start};
    while (!todo.empty()) {
      const auto at = todo.back();
      todo.pop_back();
      for (const auto& e : edges) {
        if (e.dashed && e.label == "depends on") continue;
        const auto& [from, to] = forwards ? std::pair{e.from, e.to} : std::pair{e.to, e.from};
        if (from == at && seen.insert(to).second) todo.push_back(to);
      }
    }
    return seen;
  }
};

dot_graph graph_of(const std::string& file, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"graph", file};
  args.insert(args.end(), more.begin(), more.end());
  const auto r = run_arun(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return dot_graph(r.out);
}

// Graphviz's own verdict on a DOT text.
bool graphviz_accepts(const std::string& dot_text, std::string& error) {
  arun::test::temp_dir dir;
  const auto file = dir.write("g.dot", dot_text);
  arun::io::process_spec spec;
  spec.launch.argv = {"/bin/bash", "-c", "command -v dot >/dev/null || { echo 'graphviz (dot) is not installed: "
                                         "tools/install-deps' >&2; exit 99; }; dot -Tsvg \"$0\" > /dev/null", file};
  spec.launch.env = arun::io::current_environment();
  const auto r = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  error = r.err.text;
  return r.exit_code == 0;
}

}  // namespace

TEST_CASE("graph: a skipped condition leads to the next decision, a parallel group forks and joins") {
  arun::test::temp_dir dir;
  const auto file = dir.write("g.yaml",
                              "name: g\ncontext: {n: 1}\nsteps:\n"
                              "  - id: first\n    command: echo one\n"
                              "  - id: maybe\n    condition: \"{{n}} > 0\"\n    command: echo two\n"
                              "  - id: also\n    condition: \"{{n}} > 1\"\n    command: echo three\n"
                              "  - id: p1\n    parallel_group: g\n    command: echo p1\n"
                              "  - id: p2\n    parallel_group: g\n    command: echo p2\n"
                              "  - id: after\n    command: echo done\n    depends_on: [first]\n");
  const auto g = graph_of(file);
  const auto first = g.node("first (bash)"), maybe_if = g.node("{{n}} > 0"), maybe = g.node("maybe (bash)");
  const auto also_if = g.node("{{n}} > 1"), also = g.node("also (bash)");
  CHECK(g.linked("recipe_start", first));
  CHECK(g.linked(first, maybe_if));
  CHECK(g.linked(maybe_if, maybe, "yes"));
  // Skipping `maybe` leads to the next decision, not past it.
  CHECK(g.linked(maybe_if, also_if, "skip"));
  CHECK(g.linked(maybe, also_if));
  CHECK(g.between(maybe_if, also).empty());
  // The group: one fork to both members, both members to one join; no chain between them.
  const auto p1 = g.node("p1 (bash)"), p2 = g.node("p2 (bash)"), fork = g.node("fork"), join = g.node("join");
  CHECK(g.linked(also, fork));
  CHECK(g.linked(also_if, fork, "skip"));
  CHECK(g.linked(fork, p1));
  CHECK(g.linked(fork, p2));
  CHECK(g.linked(p1, join));
  CHECK(g.linked(p2, join));
  CHECK(g.between(p1, p2).empty());
  CHECK(std::count(g.clusters.begin(), g.clusters.end(), "parallel: g") == 1);
  const auto after = g.node("after (bash)");
  CHECK(g.linked(join, after));
  CHECK(g.linked(after, "recipe_end"));
  // Sequential depends_on orders nothing: dashed.
  CHECK(g.between(first, after, true) == std::vector<std::string>{"depends on"});
  CHECK(g.between(first, after).empty());
  CHECK(g.attrs.at(maybe_if) == "shape=diamond");
  CHECK(g.attrs.at(fork) == "shape=point, width=0.12");

  // Mermaid: the same edges in its syntax.
  const auto m = run_arun({"graph", "--format", "mermaid", file});
  CHECK(m.exit_code == 0);
  CHECK_THAT(m.out, Catch::StartsWith("flowchart TD\n"));
  CHECK_THAT(m.out, Catch::Contains("  " + maybe_if + "{\"{{n}} > 0\"}\n"));
  CHECK_THAT(m.out, Catch::Contains("  " + maybe_if + " -->|\"skip\"| " + also_if + "\n"));
  CHECK_THAT(m.out, Catch::Contains("  " + fork + " --> " + p1 + "\n"));
  CHECK_THAT(m.out, Catch::Contains("  " + first + " -.->|\"depends on\"| " + after + "\n"));
  CHECK_THAT(m.out, Catch::Contains("subgraph c1 [\"parallel: g\"]\n"));
  CHECK(run_arun({"graph", "--format", "png", file}).exit_code == 2);
}

TEST_CASE("graph: execution dag follows the dependencies, data ones included, never the order") {
  arun::test::temp_dir dir;
  const auto file = dir.write("d.yaml",
                              "name: d\nexecution: dag\nsteps:\n"
                              "  - id: a\n    command: echo a\n    output: x\n"
                              "  - id: b\n    command: echo b\n"
                              "  - id: c\n    command: echo {{x}}\n    depends_on: [b]\n"
                              "  - id: d\n    condition: \"{{x}} == 'a'\"\n    command: echo d\n    depends_on: [a]\n");
  const auto g = graph_of(file);
  const auto a = g.node("a (bash)"), b = g.node("b (bash)"), c = g.node("c (bash)"), d = g.node("d (bash)");
  const auto d_if = g.node("{{x}} == 'a'");
  CHECK(g.linked("recipe_start", a));
  CHECK(g.linked("recipe_start", b));
  CHECK(g.between(a, b).empty());  // no chain
  CHECK(g.linked(b, c));
  CHECK(g.linked(a, c));  // c reads a's output
  CHECK(g.linked(a, d_if));
  CHECK(g.linked(d_if, d, "yes"));
  // The end waits for the steps nothing waits for, a skipped one too.
  CHECK(g.linked(c, "recipe_end"));
  CHECK(g.linked(d, "recipe_end"));
  CHECK(g.linked(d_if, "recipe_end", "skip"));
  CHECK(g.between(a, "recipe_end").empty());
  CHECK(g.between(b, "recipe_end").empty());

  // A loop body runs in order even under execution: dag.
  const auto body = dir.write("b.yaml", "name: b\nexecution: dag\nsteps:\n  - id: fan\n    foreach: [1, 2]\n"
                                        "    steps:\n      - id: one\n        command: echo 1\n"
                                        "      - id: two\n        command: echo 2\n");
  const auto gb = graph_of(body);
  const auto fan = gb.node("fan: for each item in [1,2]"), one = gb.node("one (bash)"), two = gb.node("two (bash)");
  CHECK(gb.linked(fan, one, "each item"));
  CHECK(gb.linked(one, two));
  CHECK(gb.between(fan, two).empty());
}

TEST_CASE("graph: a loop is one node with its body, stages hold their gates before or after") {
  arun::test::temp_dir dir;
  const auto loops = dir.write("l.yaml",
                               "name: l\ncontext: {files: [a, b]}\nsteps:\n"
                               "  - id: fan\n    foreach: \"{{files}}\"\n    parallel: 2\n    steps:\n"
                               "      - id: inner\n        command: echo {{item}}\n"
                               "      - id: check\n        condition: \"{{item}} == 'a'\"\n        command: echo ok\n"
                               "  - id: leaf\n    foreach: [1, 2]\n    command: echo {{item}}\n");
  auto g = graph_of(loops);
  const auto fan = g.node("fan: for each item in {{files}}, 2 at a time");
  CHECK(g.attrs.at(fan) == "shape=box, peripheries=2");
  const auto inner = g.node("inner (bash)"), check_if = g.node("{{item}} == 'a'"), check = g.node("check (bash)");
  CHECK(g.linked(fan, inner, "each item"));
  CHECK(g.linked(inner, check_if));
  // The body's ends lead back to the loop for the next item (dashed), the loop on when done.
  CHECK(g.between(check, fan, true) == std::vector<std::string>{"next"});
  CHECK(g.between(check_if, fan, true) == std::vector<std::string>{"skip"});
  CHECK(std::count(g.clusters.begin(), g.clusters.end(), "body of fan") == 1);
  const auto leaf = g.node("leaf (bash): for each item in [1,2]");
  CHECK(g.linked(fan, leaf, "done"));
  CHECK(g.linked(leaf, "recipe_end"));

  const auto staged = dir.write("s.yaml",
                                "name: s\nstages:\n"
                                "  - name: build\n    approval: {required: true, prompt: \"Ship {{artifact}}?\"}\n"
                                "    steps:\n      - id: make\n        command: echo a.tar\n        output: artifact\n"
                                "  - name: deploy\n    approval: {required: true, prompt: \"Go?\"}\n"
                                "    steps:\n      - id: go\n        command: echo go\n");
  g = graph_of(staged);
  const auto build_gate = g.node("approve stage build?"), deploy_gate = g.node("approve stage deploy?");
  const auto make = g.node("make (bash)"), go = g.node("go (bash)");
  // build's prompt reads build's own output: its gate comes after the stage; deploy's before.
  CHECK(g.linked("recipe_start", make));
  CHECK(g.linked(make, build_gate));
  CHECK(g.linked(build_gate, deploy_gate, "approved"));
  CHECK(g.linked(deploy_gate, go, "approved"));
  CHECK(g.linked(go, "recipe_end"));
  CHECK(g.attrs.at(build_gate) == "shape=octagon");
  CHECK(std::count(g.clusters.begin(), g.clusters.end(), "stage build") == 1);
}

TEST_CASE("graph --expand draws each sub-recipe inside its call, a recursive one once") {
  arun::test::temp_dir dir;
  dir.write("lib/child.yaml", "name: child\nsteps:\n  - id: c1\n    command: echo c1\n  - id: c2\n    command: echo c2\n");
  dir.write("lib/self.yaml", "name: self\ncontext: {n: 0}\nsteps:\n  - id: again\n    condition: \"{{n}} < 1\"\n"
                             "    recipe: self.yaml\n");
  const auto top = dir.write("top.yaml",
                             "name: top\nsteps:\n  - id: call\n    recipe: lib/child.yaml\n"
                             "  - id: loop\n    recipe: lib/self.yaml\n  - id: last\n    command: echo end\n");
  auto g = graph_of(top);  // without --expand: one node per call
  CHECK(g.label.count(g.node("call (recipe): lib/child.yaml")) == 1);
  CHECK(g.label.size() == 5);  // start, call, loop, last, end

  g = graph_of(top, {"--expand"});
  const auto call = g.node("call (recipe): lib/child.yaml"), c1 = g.node("c1 (bash)"), c2 = g.node("c2 (bash)");
  CHECK(g.linked(call, c1));
  CHECK(g.linked(c1, c2));
  const auto loop = g.node("loop (recipe): lib/self.yaml");
  CHECK(g.linked(c2, loop));
  CHECK(std::count(g.clusters.begin(), g.clusters.end(), "recipe child") == 1);
  CHECK(std::count(g.clusters.begin(), g.clusters.end(), "recipe self") == 1);
  // self calls itself: drawn once, the inner call a plain node.
  const auto again = g.node("again (recipe): self.yaml");
  CHECK(g.linked(g.node("{{n}} < 1"), again, "yes"));
  CHECK(g.linked(again, g.node("last (bash)")));
  std::string error;
  CHECK(graphviz_accepts(run_arun({"graph", top, "--expand"}).out, error));
}

TEST_CASE("graph: every shipped recipe's graph is valid DOT, names every step and connects start to end") {
  std::size_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(ARUN_SOURCE_DIR) / "recipes")) {
    if (entry.path().extension() != ".yaml") continue;
    const auto file = entry.path().string();
    INFO(file);
    const auto loaded = arun::io::load_recipe_file(file);
    REQUIRE(loaded.value);
    for (const bool expand : {false, true}) {
      const auto r = run_arun({"graph", file, expand ? "--expand" : "--format=dot"});
      REQUIRE(r.exit_code == 0);
      std::string error;
      CHECK(graphviz_accepts(r.out, error));
      INFO(error);
      const dot_graph g(r.out);
      // Every step is drawn.
      arun::for_each_step(*loaded.value, [&](const arun::step& s, int) {
        const bool drawn = std::any_of(g.label.begin(), g.label.end(), [&](const auto& kv) {
          return kv.second.rfind(s.id + " (", 0) == 0 || kv.second.rfind(s.id + ": ", 0) == 0;
        });
        INFO("step " << s.id);
        CHECK(drawn);
      });
      // Every node lies on a path from start to end.
      const auto from_start = g.reachable("recipe_start", true), to_end = g.reachable("recipe_end", false);
      for (const auto& [id, l] : g.label) {
        INFO("node " << id << " " << l);
        CHECK(from_start.contains(id));
        CHECK(to_end.contains(id));
      }
    }
    const auto m = run_arun({"graph", "--format", "mermaid", file});
    CHECK(m.exit_code == 0);
    CHECK_THAT(m.out, Catch::StartsWith("flowchart TD\n"));
    ++checked;
  }
  CHECK(checked >= 6);
}
