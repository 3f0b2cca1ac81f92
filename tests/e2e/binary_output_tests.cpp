// An output that is not UTF-8 (`printf 'caf\xe9'`): its bytes reach later steps exactly, every
// JSON arun writes stays strict UTF-8 (the byte as \udce9), and a killed run resumes with the
// same bytes.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

// Python's strict reading of a JSON file (or of each line of a JSON-lines file); "" when fine.
std::string python_strict(const fs::path& file, bool lines, const fs::path& scratch) {
  const auto out = scratch / "python.txt";
  const std::string program =
      "import json,sys\n"
      "text=open(sys.argv[1],encoding='utf-8',errors='strict').read()\n"
      "docs=[l for l in text.splitlines() if l] if sys.argv[2]=='1' else [text]\n"
      "[json.loads(d) for d in docs]\n";
  const auto script = scratch / "strict.py";
  std::ofstream(script) << program;
  const auto command = "python3 " + script.string() + " " + file.string() + " " + (lines ? "1" : "0") + " > " +
                       out.string() + " 2>&1";
  return std::system(command.c_str()) == 0 ? "" : read_text(out);
}

}  // namespace

TEST_CASE("an output that is not UTF-8 keeps its bytes and every JSON file stays strict UTF-8 across a resume") {
  arun::test::temp_dir dir{"arun-e2e-bytes"};
  const auto release = dir.root / "release";
  const auto file = dir.write(
      "bytes.yaml", "name: bytes\nsteps:\n"
                    "  - id: word\n    command: printf 'caf\\351'\n    output: word\n"
                    "  - id: first\n    command: printf '%s' {{word}} > " + (dir.root / "first.bin").string() + "\n"
                    "  - id: wait\n    command: while [ ! -e " + release.string() + " ]; do sleep 0.05; done\n"
                    "  - id: second\n    command: printf '%s' {{word}} > " + (dir.root / "second.bin").string() + "\n");
  const auto sessions = dir.root / "sessions";
  {
    arun::test::background_arun arun({file, "--session-dir", sessions.string(), "-q"}, dir.root);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until && !fs::exists(dir.root / "first.bin"))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(arun.pid, SIGKILL);
    CHECK(arun.wait_exit(std::chrono::seconds(10)) == 128 + SIGKILL + 1000);
  }
  CHECK(read_text(dir.root / "first.bin") == "caf\xe9");
  const auto session = fs::directory_iterator(sessions)->path();
  CHECK(python_strict(session / "state.json", false, dir.root) == "");
  CHECK(python_strict(session / "journal.jsonl", true, dir.root) == "");
  CHECK(read_text(session / "journal.jsonl").find("caf\\udce9") != std::string::npos);
  dir.write("release", "");  // the killed run's waiting step ends
  CHECK(arun::test::leftover_processes(std::chrono::milliseconds(5000)).empty());

  const auto r = run_arun({"resume", session.filename().string(), "--session-dir", sessions.string(), "-q",
                           "--output-format", "json"},
                          dir.root.string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_text(dir.root / "second.bin") == "caf\xe9");
  const auto result = dir.write("result.json", r.out);
  CHECK(python_strict(result, false, dir.root) == "");
  CHECK(r.out.find("\"output\":\"caf\\udce9\"") != std::string::npos);
  CHECK(python_strict(session / "state.json", false, dir.root) == "");
  CHECK(python_strict(session / "events.jsonl", true, dir.root) == "");
  CHECK(arun::test::leftover_processes().empty());
}
