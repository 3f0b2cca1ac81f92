// Naming a session on the command line (docs/sessions.md, "Naming a session"): the full id,
// `last` or `-`, a unique prefix or suffix; ambiguity and ids that could be paths; and the
// newest-first order `last` and `arun sessions` share.
#include <catch2/catch.hpp>

#include "session/session_lookup.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <string>
#include <vector>

using namespace arun::io;
using arun::test::temp_dir;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> ids = {"20261124-010230-ffee01", "20261124-010222-0840aa", "20261123-235959-0840ab",
                                      "20261120-120000-123456"};

}  // namespace

TEST_CASE("match_session takes the id, last, -, and a unique prefix or suffix") {
  CHECK(match_session("20261124-010222-0840aa", ids).id == "20261124-010222-0840aa");
  CHECK(match_session("last", ids).id == "20261124-010230-ffee01");
  CHECK(match_session("-", ids).id == "20261124-010230-ffee01");
  CHECK(match_session("20261124-01023", ids).id == "20261124-010230-ffee01");  // prefix
  CHECK(match_session("0840aa", ids).id == "20261124-010222-0840aa");          // suffix
  CHECK(match_session("20261120", ids).id == "20261120-120000-123456");        // prefix of one only
  CHECK(match_session("ee01", ids).id == "20261124-010230-ffee01");
}

TEST_CASE("match_session lists every candidate of an ambiguous prefix or suffix, newest first") {
  const auto m = match_session("20261124", ids);
  CHECK(m.id.empty());
  CHECK(m.candidates == std::vector<std::string>{"20261124-010230-ffee01", "20261124-010222-0840aa"});
  // A prefix of one and a suffix of another is ambiguous too.
  const std::vector<std::string> mixed = {"20261124-010230-abc123", "20261124-010222-000202"};
  CHECK(match_session("202", mixed).candidates.size() == 2);
}

TEST_CASE("match_session matches nothing for what could be a path, and last with no sessions") {
  for (const char* given : {"../20261124-010222-0840aa", "20261124/x", "/", ".", "..", "", "a b", "-x", ".hidden"}) {
    INFO(given);
    const auto m = match_session(given, ids);
    CHECK(m.id.empty());
    CHECK(m.candidates.empty());
  }
  CHECK(match_session("last", {}).id.empty());
  CHECK(match_session("zzz", ids).id.empty());
  // `last` is the newest id arun made, not a directory of another name.
  CHECK(match_session("last", {"zzz-notes", "20261120-120000-123456"}).id == "20261120-120000-123456");
}

TEST_CASE("session_ids orders by the id's second, then by created to the millisecond, never by mtime") {
  temp_dir d{"arun-unit-lookup"};
  const auto root = d.root.string();
  // Three sessions of the same second whose ids' random parts disagree with their creation
  // order, one of an earlier second, a directory of another name, and a symlink.
  d.write("20261124-010222-ffffff/origin.json", "{\"created\":\"2026-11-24T01:02:22.100Z\"}");
  d.write("20261124-010222-000000/origin.json", "{\"created\":\"2026-11-24T01:02:22.900Z\"}");
  d.write("20261124-010222-888888/state.json", "{\"created\":\"2026-11-24T01:02:22.500Z\"}");
  d.write("20261124-010221-aaaaaa/origin.json", "{\"created\":\"2026-11-24T01:02:21.999Z\"}");
  d.write("notes/readme", "");
  fs::create_directory_symlink(d.root / "20261124-010221-aaaaaa", d.root / "20991231-235959-aaaaaa");
  // The oldest was touched last: its modification time plays no part.
  fs::last_write_time(d.root / "20261124-010221-aaaaaa", fs::file_time_type::clock::now() + std::chrono::hours(1));
  const std::vector<std::string> expected = {"20261124-010222-000000", "20261124-010222-888888", "20261124-010222-ffffff",
                                             "20261124-010221-aaaaaa", "notes"};
  CHECK(session_ids(root) == expected);
  CHECK(find_session(root, "last").id == "20261124-010222-000000");
}

TEST_CASE("find_session says no session or lists the candidates, at most ten") {
  temp_dir d{"arun-unit-lookup"};
  const auto root = d.root.string();
  for (int i = 0; i < 12; ++i) fs::create_directories(d.root / ("20261124-0102" + std::to_string(10 + i) + "-abcdef"));
  const auto none = find_session(root, "../etc");
  CHECK(none.id.empty());
  CHECK(none.error == "no session '../etc' in " + root + " (arun sessions lists them)");
  CHECK(find_session(root, "nothing").error == "no session 'nothing' in " + root + " (arun sessions lists them)");
  const auto several = find_session(root, "abcdef");
  CHECK(several.id.empty());
  CHECK(several.error.starts_with("'abcdef' matches 12 sessions in " + root + ": 20261124-010221-abcdef, "));
  CHECK(several.error.ends_with(", 20261124-010212-abcdef, ... (2 more) (give more of the id)"));
  CHECK(find_session(root, "20261124-010215").id == "20261124-010215-abcdef");
}
