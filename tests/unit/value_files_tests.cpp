// By-file values shared between the steps of a run (value_files): written once per value,
// removed once unused past the size kept.
#include <catch2/catch.hpp>

#include "executor/shell_exports.hpp"
#include "executor/value_files.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace arun::io;
namespace fs = std::filesystem;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("an equal value shares one file, another value gets its own") {
  value_files files;
  const std::string big(200 * 1024, 'a');
  auto first = files.file_for(big, "arun-test-var-");
  auto again = files.file_for(big, "arun-test-var-");
  CHECK(first == again);
  CHECK(read(first->path()) == big);
  CHECK((fs::status(first->path()).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  auto other = files.file_for(big + "b", "arun-test-var-");
  CHECK(other->path() != first->path());
  CHECK(read(other->path()) == big + "b");
  CHECK(files.files() == 2);
}

TEST_CASE("unused files are removed, least recently used first, past the size kept") {
  value_files files(250);
  const char* prefix = "arun-test-var-";
  std::string a_path, b_path;
  {
    auto a = files.file_for(std::string(100, 'a'), prefix);
    auto b = files.file_for(std::string(100, 'b'), prefix);
    a_path = a->path();
    b_path = b->path();
  }
  auto c = files.file_for(std::string(100, 'c'), prefix);
  CHECK(files.files() == 3);  // 200 unused bytes are within the 250 kept
  files.file_for(std::string(100, 'b'), prefix);  // b again: a is now the least recently used
  files.file_for(std::string(100, 'e'), prefix);  // used and let go at once
  auto f = files.file_for(std::string(10, 'f'), prefix);  // 300 unused bytes: the oldest goes
  CHECK_FALSE(fs::exists(a_path));
  CHECK(fs::exists(b_path));
  CHECK(fs::exists(c->path()));
  CHECK(files.files() == 4);
  auto d = files.file_for(std::string(300, 'd'), prefix);  // in use: kept, whatever its size
  CHECK(fs::exists(d->path()));
  const auto d_path = d->path();
  d.reset();
  files.file_for(std::string(1, 'g'), prefix);
  CHECK_FALSE(fs::exists(d_path));  // b, e and then d went until the unused fit in 250 bytes
  CHECK_FALSE(fs::exists(b_path));
  CHECK(fs::exists(c->path()));
  CHECK(fs::exists(f->path()));
  CHECK(files.files() == 3);
}

TEST_CASE("the steps of a run share the file of a large variable they all pass") {
  value_files shared;
  const std::string big(150 * 1024, 'v');
  const std::vector<shell_export> vars = {{"RECIPE_VAR_big", big, true}, {"RECIPE_VAR_small", "s", false}};
  shell_exports one(vars, "arun-test-var-", &shared);
  shell_exports two(vars, "arun-test-var-", &shared);
  REQUIRE(one.file_paths().size() == 1);
  CHECK(one.file_paths() == two.file_paths());
  CHECK(one.preamble() == two.preamble());
  shell_exports alone(vars, "arun-test-var-");
  CHECK(alone.file_paths() != one.file_paths());  // without a shared store, a file of its own
}

TEST_CASE("a shared file that a step removed or rewrote is written again") {
  value_files files;
  const std::string value(1000, 'v');
  auto first = files.file_for(value, "arun-test-var-");
  const auto removed_path = first->path();
  fs::remove(removed_path);
  auto second = files.file_for(value, "arun-test-var-");
  CHECK(second != first);
  CHECK(read(second->path()) == value);
  {
    std::ofstream(second->path(), std::ios::trunc) << "tampered";
  }
  auto third = files.file_for(value, "arun-test-var-");
  CHECK(third != second);
  CHECK(read(third->path()) == value);
}
