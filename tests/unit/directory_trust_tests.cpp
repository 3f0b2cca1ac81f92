// Directories shared with other users (files/directory_trust.hpp): every component another
// user owns or can write is refused with its owner and mode, a sticky shared directory gives
// its per-user subdirectory, symlinks are checked and followed, missing parts are made 0700.
// Run as root (CI): uid 4242 plays the other user, through chown.
#include <catch2/catch.hpp>

#include "cache/result_store.hpp"
#include "executor/slurm_job_dirs.hpp"
#include "files/directory_trust.hpp"
#include "temp_dir.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

using namespace arun::io;
using arun::test::temp_dir;
namespace fs = std::filesystem;

namespace {

constexpr uid_t other = 4242;

void make(const fs::path& p, mode_t mode, uid_t owner = ::geteuid()) {
  fs::create_directories(p);
  REQUIRE(::chmod(p.c_str(), mode) == 0);
  REQUIRE(::chown(p.c_str(), owner, owner == ::geteuid() ? ::getegid() : owner) == 0);
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool needs_root() {
  if (::geteuid() == 0) return false;
  WARN("not root: the tests that chown to another user are skipped");
  return true;
}

}  // namespace

TEST_CASE("directory trust: a directory of the user's own is used as it is, missing parts made 0700") {
  temp_dir t;
  make(t.root / "mine", 0755);
  auto r = trust_directory((t.root / "mine" / "a" / "b").string(), "--session-dir", trust_mode::make);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.path == (t.root / "mine" / "a" / "b").string());
  CHECK(mode_of(t.root / "mine" / "a") == 0700);
  CHECK(mode_of(t.root / "mine" / "a" / "b") == 0700);
  // `look` makes nothing.
  CHECK(trust_directory((t.root / "mine" / "c").string(), "--session-dir", trust_mode::look).ok());
  CHECK_FALSE(fs::exists(t.root / "mine" / "c"));
}

TEST_CASE("directory trust: a component another user owns is refused, naming it, its owner and mode") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "bob", 0755, other);
  const auto below = trust_directory((t.root / "bob" / "s").string(), "--session-dir", trust_mode::make);
  CHECK_FALSE(below.ok());
  CHECK_THAT(below.error, Catch::Contains((t.root / "bob").string() + " is owned by") && Catch::Contains("uid 4242") &&
                              Catch::Contains("mode 0755") && Catch::Contains("--session-dir"));
  CHECK_FALSE(fs::exists(t.root / "bob" / "s"));  // nothing made below it
  // The directory itself: the fix is the user's own subdirectory beside it.
  const auto itself = trust_directory((t.root / "bob").string(), "--cache-dir", trust_mode::look);
  CHECK_FALSE(itself.ok());
  CHECK_THAT(itself.error, Catch::Contains("not by you") && Catch::Contains("--cache-dir " + t.root.string() + "/"));
  // Even a private (0700) one: its owner can still rename what arun keeps there.
  make(t.root / "bob2", 0700, other);
  CHECK_FALSE(trust_directory((t.root / "bob2").string(), "--cache-dir", trust_mode::look).ok());
}

TEST_CASE("directory trust: a component writable by others, or by a group, is refused unless sticky") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "open", 0757);
  auto r = trust_directory((t.root / "open" / "s").string(), "--session-dir", trust_mode::make);
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("writable by others") && Catch::Contains("mode 0757"));
  // Group write on a group that is not the user's private one (gid 4242).
  make(t.root / "team", 0775);
  REQUIRE(::chown((t.root / "team").c_str(), ::geteuid(), other) == 0);
  r = trust_directory((t.root / "team").string(), "--session-dir", trust_mode::look);
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("writable by its group") && Catch::Contains("chmod go-w"));
  // The user's own directory, nobody else writing it: fine.
  make(t.root / "closed", 0755);
  CHECK(trust_directory((t.root / "closed").string(), "--session-dir", trust_mode::look).ok());
}

namespace {

// The user's primary group when it is a user private group (named as the user): the group whose
// write bit the check lets pass.
bool primary_group_is_private() {
  const passwd* pw = ::getpwuid(::geteuid());
  const group* gr = pw ? ::getgrgid(pw->pw_gid) : nullptr;
  return gr && std::strcmp(gr->gr_name, pw->pw_name) == 0 && (gr->gr_mem == nullptr || gr->gr_mem[0] == nullptr ||
                                                                (std::strcmp(gr->gr_mem[0], pw->pw_name) == 0 && gr->gr_mem[1] == nullptr));
}

// `setfacl -m u:UID:rwx PATH` without setfacl: the kernel's xattr form of an access ACL
// (version 2; user::rwx, user:UID:rwx, group::---, mask::rwx, other::---). False where the
// file system keeps no ACLs.
bool grant_write_by_acl(const fs::path& p, uid_t uid) {
  struct entry {
    std::uint16_t tag, perm;
    std::uint32_t id;
  };
  constexpr std::uint32_t none = 0xffffffff;
  const entry entries[] = {{0x01, 7, none}, {0x02, 7, uid}, {0x04, 0, none}, {0x10, 7, none}, {0x20, 0, none}};
  std::string value(4, '\0');
  value[0] = 2;  // little-endian version 2
  for (const auto& e : entries) value.append(reinterpret_cast<const char*>(&e), sizeof e);
  return ::setxattr(p.c_str(), "system.posix_acl_access", value.data(), value.size(), 0) == 0;
}

}  // namespace

TEST_CASE("directory trust: an ACL that lets another user write is refused, though the mode shows the private group") {
  temp_dir t;
  make(t.root / "acl", 0700);
  if (!grant_write_by_acl(t.root / "acl", other)) {
    WARN("no POSIX ACLs here (" << std::strerror(errno) << "): skipped");
    return;
  }
  REQUIRE(mode_of(t.root / "acl") == 0770);  // the group bits are the ACL's mask now
  // As the directory itself and as an ancestor.
  for (const auto& dir : {t.root / "acl", t.root / "acl" / "s"}) {
    const auto r = trust_directory(dir.string(), "--session-dir", trust_mode::look);
    INFO(r.error);
    CHECK_FALSE(r.ok());
    CHECK_THAT(r.error, Catch::Contains("the users and groups its ACL names") && Catch::Contains("mode 0770"));
  }
  // The same mode without an ACL on the user's private group is the user's alone.
  if (primary_group_is_private()) {
    make(t.root / "plain", 0770);
    CHECK(trust_directory((t.root / "plain").string(), "--session-dir", trust_mode::look).ok());
  }
}

TEST_CASE("directory trust: a shared sticky directory gives the user's own subdirectory, made 0700") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "scratch", 01777);
  const auto r = trust_directory((t.root / "scratch").string(), "--session-dir", trust_mode::make);
  INFO(r.error);
  REQUIRE(r.ok());
  const auto mine = t.root / "scratch" / per_user_name(::geteuid());
  CHECK(r.path == mine.string());
  CHECK(mode_of(mine) == 0700);
  CHECK(per_user_path((t.root / "scratch").string(), ::geteuid()) == mine.string());
  // A sticky ancestor (like /tmp) is fine below a subdirectory of the user's own.
  CHECK(trust_directory((mine / "x").string(), "--session-dir", trust_mode::make).ok());
}

TEST_CASE("directory trust: a per-user subdirectory another user made first is refused, not taken") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "scratch", 01777);
  make(t.root / "scratch" / per_user_name(::geteuid()), 0777, other);
  const auto r = trust_directory((t.root / "scratch").string(), "--cache-dir", trust_mode::make);
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("uid 4242"));
  CHECK_THAT(r.error, Catch::Contains("someone else made your subdirectory first"));
}

TEST_CASE("directory trust: a sticky directory another user owns is no safe ancestor") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "bobs-tmp", 01777, other);
  make(t.root / "bobs-tmp" / "mine", 0700);
  const auto r = trust_directory((t.root / "bobs-tmp" / "mine").string(), "--session-dir", trust_mode::look);
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("bobs-tmp is owned by") && Catch::Contains("mode 1777"));
}

TEST_CASE("directory trust: symlinks are followed and checked, one another user owns is refused") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "real", 0700);
  make(t.root / "scratch", 01777);
  fs::create_symlink(t.root / "real", t.root / "mine-link");
  auto r = trust_directory((t.root / "mine-link" / "s").string(), "--session-dir", trust_mode::make);
  INFO(r.error);
  CHECK(r.ok());
  CHECK(fs::is_directory(t.root / "real" / "s"));
  // A link in a sticky directory that another user owns: they can point it anywhere.
  fs::create_symlink(t.root / "real", t.root / "scratch" / "link");
  REQUIRE(::lchown((t.root / "scratch" / "link").c_str(), other, other) == 0);
  r = trust_directory((t.root / "scratch" / "link").string(), "--session-dir", trust_mode::look);
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("(a symlink) is owned by") && Catch::Contains("uid 4242"));
  // A link to a directory another user owns: the target is checked as any other.
  make(t.root / "bob", 0755, other);
  fs::create_symlink(t.root / "bob", t.root / "to-bob");
  CHECK_FALSE(trust_directory((t.root / "to-bob").string(), "--session-dir", trust_mode::look).ok());
  // A file is no directory.
  std::ofstream(t.root / "file") << "x";
  CHECK_THAT(trust_directory((t.root / "file").string(), "--session-dir", trust_mode::look).error,
             Catch::Contains("is not a directory"));
}

TEST_CASE("directory trust: checked for another uid, a root-owned directory is not theirs to use") {
  temp_dir t;
  make(t.root / "roots", 0755);
  if (::geteuid() != 0) return;
  CHECK(trust_directory((t.root / "roots").string(), "--session-dir", trust_mode::look, 0).ok());
  const auto r = trust_directory((t.root / "roots").string(), "--session-dir", trust_mode::look, other);
  CHECK_FALSE(r.ok());
  CHECK_THAT(r.error, Catch::Contains("not by you"));
}

TEST_CASE("slurm job directories: jobs/ another user owns is refused before anything is made in it") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "shared", 0755);
  make(t.root / "shared" / "jobs", 0755, other);
  const auto r = prepare_slurm_job_dirs((t.root / "shared").string(), "S1", "", false);
  CHECK_THAT(r.error, Catch::Contains("/shared/jobs") && Catch::Contains("uid 4242"));
  CHECK(fs::is_empty(t.root / "shared" / "jobs"));
}

TEST_CASE("slurm job directories: made anew with a name no one can guess, kept for the resume") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "shared", 01777);
  make(t.root / "session", 0700);
  const auto record = (t.root / "session" / "slurm-jobs").string();
  const auto first = prepare_slurm_job_dirs((t.root / "shared").string(), "S1", record, false);
  INFO(first.error);
  REQUIRE(first.error.empty());
  // The shared sticky directory gives the user's own subdirectory.
  CHECK(first.shared_dir == (t.root / "shared" / per_user_name(::geteuid())).string());
  CHECK(fs::path(first.jobs_dir).parent_path() == fs::path(first.shared_dir) / "jobs");
  CHECK(fs::path(first.jobs_dir).filename().string().starts_with("S1-"));
  CHECK(mode_of(first.jobs_dir) == 0700);
  // Another fresh run of the same session id: another directory.
  const auto again = prepare_slurm_job_dirs((t.root / "shared").string(), "S1", "", false);
  CHECK(again.jobs_dir != first.jobs_dir);
  // The resume goes on in the one recorded.
  const auto resumed = prepare_slurm_job_dirs((t.root / "shared").string(), "S1", record, true);
  CHECK(resumed.jobs_dir == first.jobs_dir);
  // ... unless it is no longer private: a new one is made.
  REQUIRE(::chmod(first.jobs_dir.c_str(), 0777) == 0);
  const auto moved = prepare_slurm_job_dirs((t.root / "shared").string(), "S1", record, true);
  CHECK(moved.jobs_dir != first.jobs_dir);
}

TEST_CASE("result store: an entry another user owns is no hit, and is counted") {
  if (needs_root()) return;
  temp_dir t;
  result_store store((t.root / "cache").string(), 0);
  const std::string key(64, 'a');
  arun::cached_output out;
  out.stdout_text = "mine";
  out.created = std::chrono::system_clock::now();
  REQUIRE(store.store(key, out).empty());
  REQUIRE(store.find(key, std::nullopt));
  CHECK(store.foreign_entries() == 0);
  // Whole and well-formed, but another user's file: it is not this user's output.
  REQUIRE(::chown(store.entry_path(key).c_str(), other, other) == 0);
  CHECK_FALSE(store.find(key, std::nullopt));
  CHECK(store.foreign_entries() == 1);
}

TEST_CASE("result store: a cache directory another user owns is refused for stores and by checked_cache_dir") {
  if (needs_root()) return;
  temp_dir t;
  make(t.root / "cache", 0755, other);
  result_store store((t.root / "cache").string(), 0);
  arun::cached_output out;
  out.stdout_text = "mine";
  const auto why = store.store(std::string(64, 'b'), out);
  CHECK_THAT(why, Catch::Contains("uid 4242"));
  CHECK_FALSE(checked_cache_dir((t.root / "cache").string()).ok());
  make(t.root / "shared", 01777);
  const auto own = checked_cache_dir((t.root / "shared").string());
  CHECK(own.ok());
  CHECK(own.path == (t.root / "shared" / per_user_name(::geteuid())).string());
}

TEST_CASE("slurm job directories: a session's record names only a directory arun names, never another") {
  temp_dir t;
  const auto record = (t.root / "slurm-jobs").string();
  auto with = [&](const std::string& text) {
    std::ofstream(record) << text;
    return recorded_jobs_dir_name("S1", record);
  };
  CHECK(with("S1-0123456789abcdef\n") == "S1-0123456789abcdef");
  CHECK(with("") == "S1");  // a session of an arun before the random names
  CHECK(with("important\n").empty());  // any other directory in jobs/ is data, not the session's
  CHECK(with("S1-0123456789abcdeX\n").empty());
  CHECK(with("S1-0123456789abcdef0\n").empty());
  CHECK(with("S2-0123456789abcdef\n").empty());
  CHECK(with("../S1-0123456789abcdef\n").empty());
}
