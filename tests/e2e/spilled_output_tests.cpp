// Large outputs are kept on disk, not in memory (issue: a foreach of 500 × 4 MiB outputs
// took 12.5 GB of RSS): each output over --spill-outputs-over goes to the session's outputs/
// and the run holds a reference, so arun's memory follows the concurrency, not items × size;
// the journal, state and result stay small, and templates, conditions and a resumed run still
// see the whole value.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::read_text;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

struct spill_project {
  temp_dir dir{"arun-e2e-spill"};
  fs::path root = dir.root;
  fs::path sessions = root / "sessions";

  arun::test::arun_run run(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string(), "--output-format", "json", "-q"});
    return run_arun(args, root.string());
  }
  std::string only_id() const {
    std::vector<std::string> ids;
    for (const auto& e : fs::directory_iterator(sessions)) ids.push_back(e.path().filename().string());
    REQUIRE(ids.size() == 1);
    return ids[0];
  }
};

const json::object& step_of(const json::object& result, const std::string& id) {
  for (const auto& s : result.at("step_results").as_array())
    if (s.at("step_id").as_string() == id) return s.as_object();
  FAIL("no step " << id);
  throw;
}

// 30 outputs of 4 MiB (plus the item): 120 MiB in all, 4 at a time.
const std::string fan_out = R"(name: spill
steps:
  - id: fan
    foreach: [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29]
    max_concurrent: 4
    output: all
    command: head -c 4194304 /dev/zero | tr '\0' x; echo "{{item}}"
  - id: third
    command: printf '%s' "{{all[3]}}" | wc -c; printf '%s' "{{all[3]}}" | tail -c 1
  - id: when-loaded
    condition: "all[7] != '' and 'x7' in all[7]"
    command: echo the condition read the stored output
)";

}  // namespace

TEST_CASE("spilled outputs: a fan-out of 30 × 4 MiB outputs keeps arun's memory near the concurrency's") {
  spill_project p;
  const auto recipe = p.dir.write("spill.yaml", fan_out);
  const auto r = p.run({recipe});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // ctest runs this test case in its own process: arun is its largest child.
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  const double peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  INFO("arun's peak RSS: " << peak_mib << " MiB");
  CHECK(peak_mib < 200);  // 120 MiB of outputs held (and copied) in memory took over 1 GiB

  // The result carries stored values up to --max-output (10 MiB) in all: the first two of
  // the context's list, and past that the stand-in naming the file.
  const auto result = arun::test::result_json(r);
  CHECK(r.out.size() < 12 * 1024 * 1024);
  const auto& kept = result.at("context").at("all").as_array();
  REQUIRE(kept.size() == 30);
  CHECK(kept[0].as_string().size() == 4194305);
  const auto& all = step_of(result, "fan").at("output").as_array();
  REQUIRE(all.size() == 30);
  const auto& stand_in = all[3].at("arun_output_omitted").as_object();
  CHECK(stand_in.at("reason") == "over --max-output");
  CHECK(stand_in.at("bytes").to_number<std::int64_t>() == 4194305);
  const auto file = p.sessions / p.only_id() / std::string(stand_in.at("file").as_string());
  CHECK(fs::file_size(file) == 4194305);
  CHECK(read_text(file).substr(4194304) == "3");
  CHECK(file.parent_path() == p.sessions / p.only_id() / "outputs");

  // A template gets the whole value; so does a condition.
  CHECK(step_of(result, "third").at("output").as_string() == "4194305\n3");
  CHECK(step_of(result, "when-loaded").at("status") == "completed");

  const auto session = p.sessions / p.only_id();
  CHECK(fs::file_size(session / "journal.jsonl") < 64 * 1024);
  CHECK(fs::file_size(session / "state.json") < 12 * 1024 * 1024);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("spilled outputs: a resumed run reads the outputs an earlier run stored") {
  spill_project p;
  const auto gate = (p.root / "fixed").string();
  const auto recipe = p.dir.write("resume.yaml", R"(name: resume-spill
steps:
  - id: big
    output: blob
    command: head -c 200000 /dev/zero | tr '\0' y; echo end
  - id: flaky
    command: test -f )" + gate + R"(
  - id: use
    command: printf '%s' "{{blob}}" | wc -c
)");
  auto first = p.run({recipe});
  INFO(first.err);
  REQUIRE(first.exit_code == 1);
  const auto id = p.only_id();
  std::ofstream(gate) << "fixed\n";
  auto second = p.run({"resume", id});
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  const auto result = arun::test::result_json(second);
  CHECK(step_of(result, "use").at("output") == 200003);  // 200,000 y, "\nend"
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("spilled outputs: --spill-outputs-over sets the threshold, and 0 keeps every output in memory") {
  spill_project p;
  const auto recipe = p.dir.write("small.yaml", R"(name: small
steps:
  - id: medium
    command: head -c 5000 /dev/zero | tr '\0' z
)");
  SECTION("under the default threshold: in memory") {
    const auto r = p.run({recipe});
    REQUIRE(r.exit_code == 0);
    CHECK(step_of(arun::test::result_json(r), "medium").at("output").as_string().size() == 5000);
  }
  SECTION("over a lower threshold: stored, and the result still carries the value") {
    const auto r = p.run({recipe, "--spill-outputs-over", "1000"});
    REQUIRE(r.exit_code == 0);
    CHECK(step_of(arun::test::result_json(r), "medium").at("output").as_string().size() == 5000);
    CHECK(fs::file_size(p.sessions / p.only_id() / "outputs" / "1-medium.txt") == 5000);
  }
  SECTION("0: never stored") {
    const auto big = p.dir.write("big.yaml", R"(name: big
steps:
  - id: large
    command: head -c 300000 /dev/zero | tr '\0' z
)");
    const auto r = p.run({big, "--spill-outputs-over", "0"});
    REQUIRE(r.exit_code == 0);
    CHECK(step_of(arun::test::result_json(r), "large").at("output").as_string().size() == 300000);
    CHECK_FALSE(fs::exists(p.sessions / p.only_id() / "outputs"));
  }
  CHECK(arun::test::leftover_processes().empty());
}
