// `resources:` and `executor:` as the loader reads them: the values, what a loop passes down to
// its body, what the recipe level and `extends` do, and the exact position of every mistake.
#include <catch2/catch.hpp>

#include "recipe/recipe_chain.hpp"
#include "recipe/recipe_loader.hpp"
#include "temp_dir.hpp"

#include <arun/validation.hpp>

#include <map>
#include <string>
#include <vector>

using arun::step_resources;
using arun::io::load_recipe_text;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Load + validate, as `arun validate` does; every diagnostic formatted.
std::vector<std::string> check(const std::string& text) {
  auto r = load_recipe_text(text, "r.yaml");
  auto ds = std::move(r.diagnostics);
  if (r.value) {
    auto more = arun::validate_recipe(*r.value);
    ds.insert(ds.end(), more.begin(), more.end());
  }
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(format_diagnostic(d));
  return out;
}

std::string first_of(const std::string& text, const std::string& level) {
  for (const auto& d : check(text))
    if (d.find(": " + level + ": ") != std::string::npos) return d;
  return "<no " + level + ">";
}

std::string first_error(const std::string& text) { return first_of(text, "error"); }
std::string first_warning(const std::string& text) { return first_of(text, "warning"); }

// The recipe of `text`, which must load without errors.
arun::recipe loaded(const std::string& text) {
  auto r = load_recipe_text(text, "r.yaml");
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format_diagnostic(d));
  REQUIRE(r.value);
  return std::move(*r.value);
}

const std::string head = "name: x\nsteps:\n";

// One bash step 'a' whose resources mapping is `body` (lines indented by 6): its line N is
// line 5 + N of the file.
std::string with_resources(const std::string& body) {
  return head + "  - id: a\n    command: x\n    resources:\n" + body;
}

using licenses_t = std::map<std::string, int, std::less<>>;

}  // namespace

TEST_CASE("a step's resources are read field by field", "[resources][resources-loading]") {
  const auto r = loaded(head + R"X(  - id: a
    command: x
    resources:
      cpus: 4
      mem: 4G
      time: 2h
      partition: gpu,gpu-long
      gpus: a100:2
      licenses: {claude: 2, matlab: 1}
      extra: ["--account=lab", "--qos=high"]
  - id: b
    command: y
    resources:
      mem: 4096
      gpus: 2
      time: 1:30:00
      extra: --exclusive
  - id: c
    command: z
)X");
  REQUIRE(r.steps.size() == 3);
  const auto& a = r.steps[0].resources;
  REQUIRE(a);
  CHECK(a->cpus == 4);
  CHECK(a->memory == "4G");
  REQUIRE(a->time);
  CHECK(a->time->count() == 7200);
  CHECK(a->partition == "gpu,gpu-long");
  CHECK(a->gpus == "a100:2");
  CHECK(a->licenses == licenses_t{{"claude", 2}, {"matlab", 1}});
  CHECK(a->extra == std::vector<std::string>{"--account=lab", "--qos=high"});
  CHECK_FALSE(r.steps[0].local_only);

  const auto& b = r.steps[1].resources;
  REQUIRE(b);
  CHECK_FALSE(b->cpus);
  CHECK(b->memory == "4096");  // an integer is megabytes, as Slurm reads it
  CHECK(b->gpus == "2");
  REQUIRE(b->time);
  CHECK(b->time->count() == 5400);  // unquoted 1:30:00 is text in YAML 1.2, not sexagesimal
  CHECK(b->partition.empty());
  CHECK(b->licenses.empty());
  CHECK(b->extra == std::vector<std::string>{"--exclusive"});  // one string is one option

  CHECK(r.steps[2].resources == nullptr);
  CHECK(r.resources == nullptr);
}

TEST_CASE("an empty resources mapping is no resources", "[resources][resources-loading]") {
  const auto r = loaded(head + "  - id: a\n    command: x\n    resources: {}\n");
  CHECK(r.steps[0].resources == nullptr);
  CHECK(check(head + "  - id: a\n    command: x\n    resources: {}\n").empty());
  const auto top = loaded("name: x\nresources: {}\nsteps:\n  - id: a\n    command: x\n");
  CHECK(top.resources == nullptr);
}

TEST_CASE("recipe level resources stay on the recipe at load", "[resources][resources-loading]") {
  const auto r = loaded(R"X(name: x
resources:
  partition: batch
  cpus: 2
  licenses: {claude: 1}
steps:
  - id: a
    command: x
  - id: b
    command: y
    resources:
      cpus: 8
)X");
  REQUIRE(r.resources);
  CHECK(r.resources->partition == "batch");
  CHECK(r.resources->cpus == 2);
  CHECK(r.resources->licenses == licenses_t{{"claude", 1}});
  // Not folded into the steps: the engine inherits them when it runs a leaf.
  CHECK(r.steps[0].resources == nullptr);
  REQUIRE(r.steps[1].resources);
  CHECK(r.steps[1].resources->cpus == 8);
  CHECK(r.steps[1].resources->partition.empty());
  CHECK(r.steps[1].resources->licenses.empty());
}

TEST_CASE("a loop passes its resources down to its body field by field", "[resources][resources-loading]") {
  const auto r = loaded(head + R"X(  - id: loop
    foreach: [1, 2]
    resources:
      cpus: 4
      mem: 8G
      partition: long
      licenses: {claude: 1, matlab: 2}
      extra: ["--account=a", "--qos=x"]
    steps:
      - id: own
        command: x
        resources:
          cpus: 1
          licenses: {claude: 3}
          extra: ["--account=b"]
      - id: bare
        command: y
)X");
  REQUIRE(r.steps.size() == 1);
  const auto& loop = r.steps[0];
  REQUIRE(loop.resources);
  CHECK(loop.resources->cpus == 4);
  REQUIRE(loop.steps.size() == 2);

  const auto& own = loop.steps[0].resources;
  REQUIRE(own);
  CHECK(own->cpus == 1);             // the body step's own field wins
  CHECK(own->memory == "8G");        // the rest comes from the loop
  CHECK(own->partition == "long");
  CHECK(own->licenses == licenses_t{{"claude", 3}, {"matlab", 2}});
  CHECK(own->extra == std::vector<std::string>{"--qos=x", "--account=b"});

  const auto& bare = loop.steps[1].resources;
  REQUIRE(bare);
  CHECK(bare->cpus == 4);
  CHECK(bare->memory == "8G");
  CHECK(bare->licenses == licenses_t{{"claude", 1}, {"matlab", 2}});
  CHECK(bare.get() == loop.resources.get());  // shared, not copied
  CHECK_FALSE(loop.local_only);
  CHECK_FALSE(loop.steps[0].local_only);
}

TEST_CASE("executor local on a loop holds for its body at every depth", "[resources][resources-loading]") {
  const auto r = loaded(head + R"X(  - id: outer
    foreach: [1, 2]
    executor: local
    resources:
      partition: p-outer
      mem: 1G
    steps:
      - id: middle
        foreach: [3, 4]
        resources:
          partition: p-middle
          cpus: 2
        steps:
          - id: leaf
            command: x
            resources:
              cpus: 1
      - id: sibling
        command: y
  - id: after
    command: z
)X");
  REQUIRE(r.steps.size() == 2);
  const auto& outer = r.steps[0];
  CHECK(outer.local_only);
  REQUIRE(outer.steps.size() == 2);
  const auto& middle = outer.steps[0];
  CHECK(middle.local_only);
  CHECK(outer.steps[1].local_only);
  REQUIRE(middle.steps.size() == 1);
  const auto& leaf = middle.steps[0];
  CHECK(leaf.local_only);
  REQUIRE(leaf.resources);
  CHECK(leaf.resources->cpus == 1);                // its own
  CHECK(leaf.resources->partition == "p-middle");  // the nearer loop's
  CHECK(leaf.resources->memory == "1G");           // the outer loop's
  REQUIRE(middle.resources);
  CHECK(middle.resources->partition == "p-middle");
  CHECK(middle.resources->memory == "1G");
  CHECK_FALSE(r.steps[1].local_only);
  CHECK(r.steps[1].resources == nullptr);

  // executor: local on a plain step.
  const auto plain = loaded(head + "  - id: a\n    command: x\n    executor: local\n  - id: b\n    command: y\n");
  CHECK(plain.steps[0].local_only);
  CHECK_FALSE(plain.steps[1].local_only);
  CHECK(plain.steps[0].resources == nullptr);
}

TEST_CASE("executor other than local is an error at its value", "[resources][resources-loading]") {
  CHECK_THAT(first_error(head + "  - id: a\n    command: x\n    executor: slurm\n"),
             StartsWith("r.yaml:5:15: error: a step's 'executor' can only be 'local'") && Contains("not 'slurm'"));
  CHECK_THAT(first_error(head + "  - id: a\n    command: x\n    executor: [local]\n"), StartsWith("r.yaml:5:15: error: "));
  CHECK(first_error(head + "  - id: a\n    command: x\n    executor: local\n") == "<no error>");
}

TEST_CASE("invalid resources give a diagnostic at the value", "[resources][resources-loading]") {
  struct row {
    std::string body;      // lines of the resources mapping
    std::string expected;  // the start of the first error
  };
  const std::vector<row> rows = {
      {"      time: 30\n", "r.yaml:6:13: error: 'time' needs a unit"},
      {"      time: 1.5\n", "r.yaml:6:13: error: 'time' needs a unit"},
      {"      time: soon\n", "r.yaml:6:13: error: 'time' must be a duration"},
      {"      time: 0s\n", "r.yaml:6:13: error: 'time' must be a duration"},
      {"      time: \"1:60\"\n", "r.yaml:6:13: error: 'time' must be a duration"},
      {"      mem: 4GB\n", "r.yaml:6:12: error: 'mem' must be a size"},
      {"      mem: 0\n", "r.yaml:6:12: error: 'mem' must be a size"},
      {"      mem: -4\n", "r.yaml:6:12: error: 'mem' must be a size"},
      {"      mem: \"{{m}}\"\n", "r.yaml:6:12: error: resources are read when the recipe loads"},
      {"      gpus: x\n", "r.yaml:6:13: error: 'gpus' must be a count, or TYPE:COUNT"},
      {"      gpus: 0\n", "r.yaml:6:13: error: 'gpus' must be a count, or TYPE:COUNT"},
      {"      gpus: a100:0\n", "r.yaml:6:13: error: 'gpus' must be a count, or TYPE:COUNT"},
      {"      cpus: 0\n", "r.yaml:6:13: error: 'cpus' must be a whole number from 1 to 100000"},
      {"      cpus: two\n", "r.yaml:6:13: error: 'cpus' must be a whole number from 1 to 100000"},
      {"      partition: \"a b\"\n", "r.yaml:6:18: error: 'partition' must be a partition name"},
      {"      licenses: {claude: 0}\n", "r.yaml:6:26: error: license 'claude' needs a count from 1 to 1000000"},
      {"      licenses:\n        claude: x\n", "r.yaml:7:17: error: license 'claude' needs a count from 1 to 1000000"},
      {"      licenses: {\"a b\": 1}\n", "r.yaml:6:18: error: license names use letters"},
      {"      licenses: [claude]\n", "r.yaml:6:17: error: 'licenses' must be a mapping"},
      {"      extra: [\"-A lab\"]\n", "r.yaml:6:15: error: 'extra' entries are sbatch options in their long form"},
      {"      extra: [\"--account=lab\", \"--job-name=x\"]\n",
       "r.yaml:6:32: error: '--job-name' cannot be given in 'extra': "},
      {"      extra:\n        - --mem=4G\n", "r.yaml:7:11: error: '--mem' cannot be given in 'extra': use resources.mem"},
      {"      extra: --array=1-3\n", "r.yaml:6:14: error: '--array' cannot be given in 'extra': "},
      {"      partitions: gpu\n", "r.yaml:6:7: error: unknown key 'partitions' in the resources of step 'a' (did you "
                                  "mean 'partition'?)"},
      // sbatch takes abbreviations: a prefix of a refused option is refused too.
      {"      extra: [\"--job-nam=x\"]\n", "r.yaml:6:15: error: '--job-nam' cannot be given in 'extra': "},
      {"      extra: [\"--outp=/tmp/o\"]\n", "r.yaml:6:15: error: '--outp' cannot be given in 'extra': "},
      {"      extra: [\"--clusters=other\"]\n", "r.yaml:6:15: error: '--clusters' cannot be given in 'extra': "},
      {"      extra: [\"--account={{acct}}\"]\n", "r.yaml:6:15: error: resources are read when the recipe loads"},
      {"      time: \"{{t}}\"\n", "r.yaml:6:13: error: resources are read when the recipe loads"},
      {"      time: 400d\n", "r.yaml:6:13: error: 'time' is more than a year"},
      {"      extra: [\"--account=a\", \"--account=b\"]\n", "r.yaml:6:30: error: '--account' is given twice"},
      {"      mem: 4G\n      extra: [\"--mem-per-cpu=1G\"]\n", "r.yaml:7:14: error: '--mem-per-cpu' and 'mem' cannot"},
      {"      gpus: 2\n      extra: [\"--gres=gpu:2\"]\n", "r.yaml:7:14: error: '--gres' and 'gpus' cannot"},
  };
  for (const auto& [body, expected] : rows) {
    INFO(body);
    CHECK_THAT(first_error(with_resources(body)), StartsWith(expected));
  }
  // The hint of the bare number says what to write.
  CHECK_THAT(first_error(with_resources("      time: 30\n")), Contains("30m"));
  // A mapping that is not one.
  CHECK_THAT(first_error(head + "  - id: a\n    command: x\n    resources: 4\n"),
             StartsWith("r.yaml:5:16: error: 'resources' must be a mapping"));
  // The same checks at the recipe level, with the recipe named.
  CHECK_THAT(first_error("name: x\nresources:\n  mem: 4GB\nsteps:\n  - id: a\n    command: x\n"),
             StartsWith("r.yaml:3:8: error: 'mem' must be a size"));
  CHECK_THAT(first_error("name: x\nresources:\n  partitons: p\nsteps:\n  - id: a\n    command: x\n"),
             StartsWith("r.yaml:3:3: error: unknown key 'partitons' in the resources of the recipe"));
}

TEST_CASE("very long resource values are refused without overflowing the matcher's stack", "[resources][resources-loading]") {
  const std::string long_text(50'000, 'a');
  for (const auto& body : {"      time: \"" + std::string(25'000, '1') + "h\"\n", "      partition: " + long_text + "\n",
                           "      gpus: " + long_text + ":1\n", "      extra: --account=" + long_text + "\n"}) {
    const auto error = first_error(with_resources(body));
    CHECK_THAT(error, Contains("r.yaml:6:"));
  }
  CHECK_THAT(first_error(head + "  - id: " + long_text + "\n    command: x\n"), Contains("longer than 256"));
}

TEST_CASE("an unknown resources key far from a known one is a warning", "[resources][resources-loading]") {
  const auto text = with_resources("      cpus: 1\n      zzzz: 1\n");
  CHECK(first_error(text) == "<no error>");
  CHECK(first_warning(text) == "r.yaml:7:7: warning: unknown key 'zzzz' in the resources of step 'a'");
}

TEST_CASE("resources on an approval gate are a warning", "[resources][resources-loading]") {
  const auto text = head + "  - id: g\n    requires_approval: true\n    resources: {cpus: 2}\n  - id: a\n    command: x\n";
  CHECK(first_error(text) == "<no error>");
  CHECK(first_warning(text) == "r.yaml:5:16: warning: 'resources' has no effect on an approval gate: it runs nothing");
  const auto exec = head + "  - id: g\n    requires_approval: true\n    executor: local\n  - id: a\n    command: x\n";
  CHECK(first_warning(exec) == "r.yaml:5:15: warning: 'executor' has no effect on an approval gate: it runs nothing");
  // A step with a body and an approval runs something: no warning.
  CHECK(first_warning(head + "  - id: a\n    command: x\n    requires_approval: true\n    resources: {cpus: 2}\n") ==
        "<no warning>");
}

TEST_CASE("extends merges the child's resources over the parent's field by field", "[resources][resources-loading]") {
  arun::recipe parent;
  parent.name = "parent";
  step_resources p;
  p.cpus = 2;
  p.memory = "8G";
  p.partition = "batch";
  p.licenses = {{"claude", 1}, {"matlab", 1}};
  p.extra = {"--account=a", "--qos=x"};
  parent.resources = std::make_shared<const step_resources>(p);

  arun::recipe child;
  child.name = "child";
  step_resources c;
  c.cpus = 16;
  c.licenses = {{"claude", 4}};
  c.extra = {"--account=b"};
  child.resources = std::make_shared<const step_resources>(c);

  const auto merged = arun::io::merge_extended(parent, child);
  REQUIRE(merged.resources);
  CHECK(merged.resources->cpus == 16);
  CHECK(merged.resources->memory == "8G");
  CHECK(merged.resources->partition == "batch");
  CHECK(merged.resources->licenses == licenses_t{{"claude", 4}, {"matlab", 1}});
  CHECK(merged.resources->extra == std::vector<std::string>{"--qos=x", "--account=b"});

  // A child without resources takes the parent's; a parent without them leaves the child's.
  arun::recipe bare_child;
  bare_child.name = "bare";
  const auto inherited = arun::io::merge_extended(parent, bare_child);
  REQUIRE(inherited.resources);
  CHECK(inherited.resources->partition == "batch");
  CHECK(inherited.resources->cpus == 2);
  arun::recipe bare_parent;
  bare_parent.name = "bare";
  const auto own = arun::io::merge_extended(bare_parent, child);
  REQUIRE(own.resources);
  CHECK(own.resources->cpus == 16);
  CHECK(own.resources->partition.empty());
  CHECK(arun::io::merge_extended(bare_parent, bare_child).resources == nullptr);
}

TEST_CASE("extends from files merges resources", "[resources][resources-loading]") {
  arun::test::temp_dir dir("arun-res");
  dir.write("base.yaml", "name: base\nresources:\n  partition: batch\n  mem: 2G\n  cpus: 2\nsteps:\n  - id: a\n"
                         "    command: x\n");
  const auto child = dir.write("child.yaml", "name: child\nextends: base\nresources:\n  cpus: 8\nsteps:\n"
                                             "  - id: b\n    command: y\n");
  arun::io::discovery_options o;
  o.working_dir = dir.root.string();
  o.home = (dir.root / "home").string();
  const auto r = arun::io::load_recipe_chain(child, o);
  for (const auto& d : r.diagnostics) UNSCOPED_INFO(format_diagnostic(d));
  REQUIRE(r.value);
  REQUIRE(r.value->resources);
  CHECK(r.value->resources->cpus == 8);
  CHECK(r.value->resources->partition == "batch");
  CHECK(r.value->resources->memory == "2G");
}
