// owned_dir: removals and reads below a verified directory descriptor never follow a symlink
// out, whatever is planted at the top, on the way down, or swapped in between check and use.
#include <catch2/catch.hpp>

#include "files/owned_tree.hpp"
#include "files/private_files.hpp"
#include "temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using arun::io::owned_dir;

namespace {

struct fixture {
  arun::test::temp_dir dir{"arun-owned-tree"};
  fs::path root = dir.root / "root";
  fs::path victim = dir.root / "victim";
  fixture() {
    fs::create_directories(root);
    fs::create_directories(victim / "inner");
    std::ofstream(victim / "precious") << "keep me";
    std::ofstream(victim / "inner" / "deep") << "keep me too";
  }
  owned_dir opened(owned_dir::link top = owned_dir::link::refuse) const {
    auto r = owned_dir::open(root.string(), top);
    if (auto* e = std::get_if<std::string>(&r)) FAIL(*e);
    return std::move(std::get<owned_dir>(r));
  }
  bool victim_whole() const {
    return fs::exists(victim / "precious") && fs::exists(victim / "inner" / "deep");
  }
};

}  // namespace

TEST_CASE("owned_dir removes a tree below it, and a missing entry is no error") {
  fixture f;
  fs::create_directories(f.root / "a" / "b" / "c");
  std::ofstream(f.root / "a" / "b" / "c" / "file") << "x";
  std::ofstream(f.root / "a" / "top") << "x";
  const auto d = f.opened();
  CHECK(d.remove("a") == "");
  CHECK_FALSE(fs::exists(f.root / "a"));
  CHECK(fs::exists(f.root));
  CHECK(d.remove("a") == "");
  CHECK(d.remove("never/was") == "");
}

TEST_CASE("owned_dir unlinks a symlink to outside at the top and never follows it") {
  fixture f;
  fs::create_directory_symlink(f.victim, f.root / "tree");
  const auto d = f.opened();
  CHECK(d.remove("tree") == "");
  CHECK_FALSE(fs::exists(fs::symlink_status(f.root / "tree")));
  CHECK(f.victim_whole());
}

TEST_CASE("owned_dir unlinks nested symlinks to outside and never follows them") {
  fixture f;
  fs::create_directories(f.root / "tree" / "sub");
  fs::create_directory_symlink(f.victim, f.root / "tree" / "sub" / "link");
  fs::create_symlink(f.victim / "precious", f.root / "tree" / "file-link");
  const auto d = f.opened();
  CHECK(d.remove("tree") == "");
  CHECK_FALSE(fs::exists(fs::symlink_status(f.root / "tree")));
  CHECK(f.victim_whole());
}

TEST_CASE("owned_dir refuses a way down through a symlink") {
  fixture f;
  fs::create_directory_symlink(f.victim, f.root / "worktrees");
  const auto d = f.opened();
  const auto problem = d.remove("worktrees/inner");
  CHECK_THAT(problem, Catch::Contains("worktrees is not a directory (a symlink"));
  CHECK(f.victim_whole());
  CHECK_FALSE(d.has("worktrees/inner"));
  auto below = d.open_below("worktrees");
  CHECK(std::holds_alternative<std::string>(below));
}

TEST_CASE("owned_dir refuses '..', '.', empty and absolute names") {
  fixture f;
  const auto d = f.opened();
  for (const char* bad : {"..", "../victim", "a/../../victim", "./x", "a//b", "/etc", ""}) {
    INFO(bad);
    CHECK_THAT(d.remove(bad), Catch::Contains("not a plain relative path"));
  }
  CHECK(f.victim_whole());
}

TEST_CASE("owned_dir::open refuses a symlink unless the user named it, and another owner") {
  fixture f;
  const auto link = f.dir.root / "link";
  fs::create_directory_symlink(f.root, link);
  auto refused = owned_dir::open(link.string());
  REQUIRE(std::holds_alternative<std::string>(refused));
  CHECK_THAT(std::get<std::string>(refused), Catch::Contains("is a symlink"));
  CHECK(std::holds_alternative<owned_dir>(owned_dir::open(link.string(), owned_dir::link::follow)));
  if (::geteuid() == 0) {
    REQUIRE(::chown(f.victim.c_str(), 4242, 4242) == 0);
    auto other = owned_dir::open(f.victim.string());
    REQUIRE(std::holds_alternative<std::string>(other));
    CHECK_THAT(std::get<std::string>(other), Catch::Contains("owned by uid 4242"));
  }
}

TEST_CASE("a directory swapped for a symlink between check and use is harmless") {
  fixture f;
  fs::create_directories(f.root / "session" / "copies" / "x");
  const auto d = f.opened();
  // Checked as a plain path ...
  std::string why;
  const auto rel = arun::io::path_below(f.root.string(), (f.root / "session" / "copies" / "x").string(), why);
  REQUIRE(rel);
  CHECK(*rel == "session/copies/x");
  // ... then the way to it becomes a symlink to the victim before the removal.
  fs::remove_all(f.root / "session" / "copies");
  fs::create_directory_symlink(f.victim, f.root / "session" / "copies");
  fs::rename(f.victim / "inner", f.victim / "x");
  CHECK_THAT(d.remove(*rel), Catch::Contains("is not a directory"));
  CHECK(fs::exists(f.victim / "x" / "deep"));
  // A held descriptor keeps naming the directory it opened, whatever is renamed meanwhile.
  fs::remove(f.root / "session" / "copies");
  fs::create_directories(f.root / "session" / "copies" / "y");
  auto held = d.open_below("session/copies");
  REQUIRE(std::holds_alternative<owned_dir>(held));
  fs::rename(f.root / "session" / "copies", f.root / "moved");
  fs::create_directory_symlink(f.victim, f.root / "session" / "copies");
  CHECK(std::get<owned_dir>(held).remove("y") == "");
  CHECK_FALSE(fs::exists(f.root / "moved" / "y"));
  CHECK(fs::exists(f.victim / "x" / "deep"));
  CHECK(fs::exists(f.victim / "precious"));
}

TEST_CASE("path_below accepts entries inside the root only") {
  fixture f;
  fs::create_directories(f.root / "s" / "worktrees");
  std::string why;
  CHECK(arun::io::path_below(f.root.string(), (f.root / "s" / "worktrees" / "a").string(), why) ==
        std::optional<std::string>("s/worktrees/a"));
  for (const auto& bad : {(f.root / ".." / "victim").string(), f.victim.string(), f.root.string(), std::string("s/x"),
                          (f.root / "s" / ".." / ".." / "victim").string(), std::string("/")}) {
    INFO(bad);
    CHECK_FALSE(arun::io::path_below(f.root.string(), bad, why).has_value());
  }
  // A symlink on the way is refused; the entry itself may be one (a removal unlinks it).
  fs::create_directory_symlink(f.victim, f.root / "s" / "copies");
  CHECK_FALSE(arun::io::path_below(f.root.string(), (f.root / "s" / "copies" / "inner").string(), why).has_value());
  CHECK_THAT(why, Catch::Contains("not a directory"));
  CHECK(arun::io::path_below(f.root.string(), (f.root / "s" / "copies").string(), why).has_value());
  // The root's real path counts as the root.
  fs::create_directory_symlink(f.root, f.dir.root / "alias");
  CHECK(arun::io::path_below((f.dir.root / "alias").string(), (f.root / "s" / "worktrees" / "a").string(), why).has_value());
}

TEST_CASE("owned_dir::read_file reads regular files only, never blocks on a FIFO, caps the size") {
  fixture f;
  std::ofstream(f.root / "state.json") << "{\"a\":1}";
  REQUIRE(::mkfifo((f.root / "fifo").c_str(), 0600) == 0);
  fs::create_symlink(f.victim / "precious", f.root / "link");
  const auto d = f.opened();
  std::string why;
  CHECK(d.read_file("state.json", 100, why) == std::optional<std::string>("{\"a\":1}"));
  CHECK_FALSE(d.read_file("state.json", 3, why).has_value());
  CHECK_THAT(why, Catch::Contains("larger than 3 bytes"));
  CHECK_FALSE(d.read_file("fifo", 100, why).has_value());
  CHECK_THAT(why, Catch::Contains("not a regular file"));
  CHECK_FALSE(d.read_file("link", 100, why).has_value());
  CHECK_THAT(why, Catch::Contains("symlink"));
  CHECK_FALSE(d.read_file("missing", 100, why).has_value());
  CHECK_THAT(why, Catch::Contains("no such file"));
}

TEST_CASE("owned_file reads a file in pieces: each line with its offset, a torn last line, long lines cut") {
  fixture f;
  // Lines around the 1 MiB blocks each_line reads: one spans two blocks.
  const std::string first = "first", spanning(1024 * 1024, 'x'), last_torn = "{\"torn";
  std::ofstream(f.root / "journal.jsonl", std::ios::binary) << first << "\n\n" << spanning << "\n" << last_torn;
  fs::create_symlink(f.victim / "precious", f.root / "link");
  const auto d = f.opened();
  std::string why;
  auto file = d.open_file("journal.jsonl", why);
  REQUIRE(file.has_value());
  CHECK(file->size() == first.size() + 2 + spanning.size() + 1 + last_torn.size());
  std::vector<std::pair<std::string, std::uint64_t>> lines;
  CHECK(file->each_line([&](std::string_view line, std::uint64_t at) { lines.emplace_back(line, at); }, why));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == std::pair<std::string, std::uint64_t>(first, 0));
  CHECK(lines[1] == std::pair<std::string, std::uint64_t>("", first.size() + 1));
  CHECK(lines[2].first == spanning);
  CHECK(lines[2].second == first.size() + 2);
  CHECK(lines[3] == std::pair<std::string, std::uint64_t>(last_torn, first.size() + 2 + spanning.size() + 1));
  // Each offset reads its line back.
  CHECK(file->read_at(lines[3].second, 100, why) == std::optional<std::string>(last_torn));
  // A line over the bound is passed cut; the next one keeps its own offset.
  lines.clear();
  CHECK(file->each_line([&](std::string_view line, std::uint64_t at) { lines.emplace_back(line, at); }, why, 10));
  REQUIRE(lines.size() == 4);
  CHECK(lines[2].first == std::string(10, 'x'));
  CHECK(lines[3].second == first.size() + 2 + spanning.size() + 1);
  // What read_file refuses, open_file refuses too.
  CHECK_FALSE(d.open_file("link", why).has_value());
  CHECK_THAT(why, Catch::Contains("symlink"));
  CHECK_FALSE(d.open_file("../victim/precious", why).has_value());
}

namespace {
std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("private files: a link planted as the file or as its temp file is never written through") {
  arun::test::temp_dir t;
  const auto victim = t.root / "victim";
  std::ofstream(victim) << "keep me";
  // replace_private_file's temp file, planted: the write makes a file of its own.
  fs::create_symlink(victim, t.root / "index.json.tmp");
  CHECK(arun::io::replace_private_file((t.root / "index.json").string(), "new"));
  CHECK(text_of(victim) == "keep me");
  CHECK(fs::is_regular_file(fs::symlink_status(t.root / "index.json")));
  CHECK(text_of(t.root / "index.json") == "new");
  // write_private_file on a link: refused (ELOOP), not followed.
  fs::create_symlink(victim, t.root / "argv");
  errno = 0;
  CHECK_FALSE(arun::io::write_private_file((t.root / "argv").string(), "argv"));
  CHECK(errno == ELOOP);
  CHECK(text_of(victim) == "keep me");
}
