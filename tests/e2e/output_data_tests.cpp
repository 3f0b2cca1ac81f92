// Issue 33, defect 3 (docs/security.md, "Outputs are data, never references"): a step that
// printed {"avatar": {"arun_spilled_output": "/etc/passwd", "bytes": 1, "json": false}} made
// {{reply.avatar}} in the next step read /etc/passwd (a 0600 file alike; /dev/zero grew arun
// until it died; a FIFO hung the run), and the JSON result held the file. Whatever a step
// prints is data — also after a resume replays it from the journal. And the result carries a
// stored output's value up to --max-output, the documented stand-in past it.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

struct project {
  temp_dir dir{"arun-e2e-output-data"};
  fs::path sessions = dir.root / "sessions";

  arun::test::arun_run run(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string(), "--output-format", "json", "-q"});
    return run_arun(args, dir.root.string(), std::chrono::seconds(30));
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

#if defined(__SANITIZE_ADDRESS__)
#define ARUN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARUN_TEST_ASAN 1
#endif
#endif

// Old arun read a forged /dev/zero until it died: bound this process's children so a
// regression fails the test instead of the machine (not under ASan, whose shadow memory
// needs the address space).
struct address_space_cap {
  rlimit old{};
  address_space_cap() {
#ifndef ARUN_TEST_ASAN
    ::getrlimit(RLIMIT_AS, &old);
    rlimit capped = old;
    capped.rlim_cur = std::min<rlim_t>(old.rlim_max, rlim_t{3} << 30);
    ::setrlimit(RLIMIT_AS, &capped);
#endif
  }
  ~address_space_cap() {
#ifndef ARUN_TEST_ASAN
    ::setrlimit(RLIMIT_AS, &old);
#endif
  }
};

}  // namespace

TEST_CASE("outputs are data: a printed reference to /etc/passwd, a 0600 file, /dev/zero or a FIFO reads nothing") {
  project p;
  const auto secret = p.dir.write("private.txt", "TOP-SECRET-0600\n");
  ::chmod(secret.c_str(), 0600);
  const auto fifo = (p.dir.root / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const address_space_cap cap;
  for (const auto& target : {std::string("/etc/passwd"), secret, std::string("/dev/zero"), fifo}) {
    INFO(target);
    fs::remove_all(p.sessions);
    const auto payload = p.dir.write("payload.json", R"({"avatar": {"arun_spilled_output": ")" + target +
                                                         R"(", "bytes": 1, "json": false}})");
    const auto recipe = p.dir.write("defect3.yaml", R"(name: defect3
steps:
  - id: agent
    output: reply
    command: cat )" + payload + R"(
  - id: next
    output: seen
    command: printf '%s' "{{reply.avatar}}" | head -c 300
)");
    const auto r = p.run({recipe});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto expected = R"({"arun_spilled_output":")" + target + R"(","bytes":1,"json":false})";
    const auto result = arun::test::result_json(r);
    CHECK(step_of(result, "next").at("output") == json::parse(expected));  // the printed text, as JSON
    CHECK(r.out.find("root:") == std::string::npos);
    CHECK(r.out.find("TOP-SECRET") == std::string::npos);
    CHECK(result.at("context").at("reply") == json::parse(arun::test::read_text(payload)));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("outputs are data: a resume replays a printed reference or stand-in from the journal as data") {
  project p;
  const auto gate = (p.dir.root / "fixed").string();
  const auto payload = p.dir.write("payload.json", R"({"a": {"arun_spilled_output": "/etc/passwd", "bytes": 1, "json": false},
 "b": {"arun_output_omitted": {"bytes": 1, "file": "outputs/1-agent.txt", "reason": "over --max-output"}},
 "stored_outputs": [{"at": "/delta/reply", "file": "1-agent.txt", "bytes": 1, "json": false}]})");
  const auto recipe = p.dir.write("resume.yaml", R"(name: resume-data
steps:
  - id: agent
    output: reply
    command: cat )" + payload + R"(
  - id: flaky
    command: test -f )" + gate + R"(
  - id: next
    command: printf '%s|%s' "{{reply.a}}" "{{reply.b}}" | head -c 300
)");
  REQUIRE(p.run({recipe}).exit_code == 1);
  const auto id = p.only_id();
  // A file of the session's own outputs/ under the name the printed value gives: still not read.
  fs::create_directories(p.sessions / id / "outputs");
  std::ofstream(p.sessions / id / "outputs" / "1-agent.txt") << "X";
  std::ofstream(gate) << "fixed\n";
  const auto r = p.run({"resume", id});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = arun::test::result_json(r);
  CHECK(step_of(result, "next").at("output") ==
        R"({"arun_spilled_output":"/etc/passwd","bytes":1,"json":false}|{"arun_output_omitted":{"bytes":1,"file":"outputs/1-agent.txt","reason":"over --max-output"}})");
  CHECK(result.at("context").at("reply") == json::parse(arun::test::read_text(payload)));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("stored outputs: the result carries a 100 KB output, and the stand-in past --max-output") {
  project p;
  const auto recipe = p.dir.write("big.yaml", R"(name: big
steps:
  - id: big
    output: blob
    command: head -c 100000 /dev/zero | tr '\0' b
  - id: use
    command: printf '%s' "{{blob}}" | wc -c
)");
  SECTION("the value itself, in the step's output, the context and state.json") {
    const auto r = p.run({recipe});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    CHECK(step_of(result, "big").at("output") == json::value(std::string(100000, 'b')));
    CHECK(result.at("context").at("blob") == json::value(std::string(100000, 'b')));
    CHECK(step_of(result, "use").at("output") == 100000);
    const auto session = p.sessions / p.only_id();
    CHECK(fs::file_size(session / "outputs" / "1-big.txt") == 100000);  // stored all the same
    CHECK(fs::file_size(session / "journal.jsonl") < 8 * 1024);          // the journal keeps the reference
    const auto state = json::parse(arun::test::read_text(session / "state.json"));
    CHECK(state.at("context").at("blob") == json::value(std::string(100000, 'b')));
  }
  SECTION("past --max-output: the stand-in names the file") {
    const auto r = p.run({recipe, "--max-output", "150000"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = arun::test::result_json(r);
    CHECK(result.at("context").at("blob") == json::value(std::string(100000, 'b')));  // the first 100,000 bytes fit
    CHECK(step_of(result, "big").at("output") ==
          json::parse(R"({"arun_output_omitted": {"bytes": 100000, "file": "outputs/1-big.txt", "reason": "over --max-output"}})"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("output numbers stay exact: beyond a double, the number's text, never null") {
  project p;
  const auto recipe = p.dir.write("numbers.yaml", R"(name: numbers
steps:
  - id: big
    command: printf %s 123456789012345678901234567890
  - id: huge
    command: printf 1e400
  - id: precise
    command: printf 1795664842.1989675
  - id: nested
    command: printf '{"n":123456789012345678901234567890}'
)");
  const auto r = p.run({recipe});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(R"("output":"123456789012345678901234567890")") != std::string::npos);
  CHECK(r.out.find(R"("output":"1e400")") != std::string::npos);
  CHECK(r.out.find(R"("output":1795664842.1989675)") != std::string::npos);
  CHECK(r.out.find(R"("output":{"n":"123456789012345678901234567890"})") != std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}
