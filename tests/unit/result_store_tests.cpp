// The on-disk result cache (cache/result_store.hpp): entries round-trip whole, anything
// damaged is a miss, concurrent writers never leave a torn entry, the size cap evicts the
// least recently used, and cache.files digests exactly the files its globs match.
#include <catch2/catch.hpp>

#include "cache/age.hpp"
#include "cache/result_store.hpp"
#include "cache/sha256.hpp"
#include "files/private_files.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

using namespace arun;
using arun::test::temp_dir;
namespace fs = std::filesystem;
using clock_type = std::chrono::system_clock;

namespace {

std::string key_of(int n) { return io::sha256_hex("key " + std::to_string(n)); }

cached_output output_of(std::string text, std::string instance = "summary[0]") {
  cached_output o;
  o.stdout_text = std::move(text);
  o.duration = std::chrono::milliseconds(1234);
  o.recipe = "summarize";
  o.instance = std::move(instance);
  o.session = "20260101-abc";
  o.created = clock_type::now();
  return o;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

void set_mtime(const std::string& path, clock_type::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

clock_type::time_point mtime_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return clock_type::time_point(std::chrono::duration_cast<clock_type::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

std::vector<std::string> temp_files_below(const fs::path& root) {
  std::vector<std::string> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().rfind(".tmp-", 0) == 0) out.push_back(e.path().string());
  return out;
}

std::string digest(const std::vector<std::string>& globs, const fs::path& dir, std::vector<std::string>& warnings,
                   std::string& error) {
  io::result_store store("/nonexistent", 0);
  return store.digest_files(globs, dir.string(), warnings, error);
}

std::string digest(const std::vector<std::string>& globs, const fs::path& dir) {
  std::vector<std::string> warnings;
  std::string error;
  auto d = digest(globs, dir, warnings, error);
  REQUIRE(error.empty());
  return d;
}

}  // namespace

TEST_CASE("result_store: sha256 gives the known digests of empty and abc also fed in pieces", "[cache]") {
  CHECK(io::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(io::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  io::sha256 h;
  h.update("a");
  h.update("");
  h.update("bc");
  CHECK(h.hex_digest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(h.hex_digest() == io::sha256_hex(""));  // starts over after a digest
  io::result_store store("/nonexistent", 0);
  CHECK(store.hash("abc") == io::sha256_hex("abc"));
}

TEST_CASE("result_store: a stored output is found whole with every field and a private layout", "[cache]") {
  temp_dir dir{"arun-cache"};
  const auto root = dir.root / "cache";
  io::result_store store(root.string(), 0);
  const auto key = key_of(1);
  auto out = output_of(std::string("line 1\nbinary \xff\xfe and \"quotes\"\n", 30), "summary[3]");
  out.created = clock_type::time_point(std::chrono::milliseconds(1'790'000'000'123));
  CHECK_FALSE(store.find(key, std::nullopt));
  REQUIRE(store.store(key, out).empty());

  const auto path = root / "results" / key.substr(0, 2) / (key + ".json");
  CHECK(store.entry_path(key) == path.string());
  REQUIRE(fs::is_regular_file(path));
  CHECK(store.stored_bytes() == fs::file_size(path));
  CHECK(mode_of(path) == 0600);
  CHECK(mode_of(path.parent_path()) == 0700);
  CHECK(mode_of(root / "results") == 0700);
  CHECK(mode_of(root) == 0700);

  const auto hit = store.find(key, std::nullopt);
  REQUIRE(hit);
  CHECK(hit->stdout_text == out.stdout_text);
  CHECK(hit->duration == std::chrono::milliseconds(1234));
  CHECK(hit->recipe == "summarize");
  CHECK(hit->instance == "summary[3]");
  CHECK(hit->session == "20260101-abc");
  CHECK(hit->created == out.created);

  const auto text = io::read_whole_file(path.string());
  REQUIRE(text);
  CHECK_THAT(*text, Catch::Contains("\"format\":1") && Catch::Contains("\"key\":\"" + key + "\"") &&
                        Catch::Contains("\"output_sha256\":\"" + io::sha256_hex(out.stdout_text) + "\"") &&
                        Catch::Contains("\"arun_version\":\"" ARUN_VERSION "\""));
  CHECK(temp_files_below(root).empty());
}

TEST_CASE("result_store: an unknown key misses and a stored entry replaces the older one", "[cache]") {
  temp_dir dir{"arun-cache"};
  io::result_store store(dir.root.string(), 0);
  REQUIRE(store.store(key_of(1), output_of("first")).empty());
  CHECK_FALSE(store.find(key_of(2), std::nullopt));
  REQUIRE(store.store(key_of(1), output_of("second")).empty());
  const auto hit = store.find(key_of(1), std::nullopt);
  REQUIRE(hit);
  CHECK(hit->stdout_text == "second");
}

TEST_CASE("result_store: max_age misses an old entry that any age still finds", "[cache]") {
  temp_dir dir{"arun-cache"};
  io::result_store store(dir.root.string(), 0);
  auto old = output_of("old");
  old.created = clock_type::now() - std::chrono::hours(3);
  REQUIRE(store.store(key_of(1), old).empty());
  CHECK_FALSE(store.find(key_of(1), std::chrono::hours(2)));
  CHECK(store.find(key_of(1), std::chrono::hours(4)));
  CHECK(store.find(key_of(1), std::nullopt));
  // created unset: stored as now
  auto fresh = output_of("fresh");
  fresh.created = {};
  REQUIRE(store.store(key_of(2), fresh).empty());
  const auto hit = store.find(key_of(2), std::chrono::seconds(60));
  REQUIRE(hit);
  CHECK(clock_type::now() - hit->created < std::chrono::seconds(60));
}

TEST_CASE("result_store: a torn entry or a tampered output is a miss and stays on disk", "[cache]") {
  temp_dir dir{"arun-cache"};
  io::result_store store(dir.root.string(), 0);
  REQUIRE(store.store(key_of(1), output_of("a long enough output to cut in half")).empty());
  REQUIRE(store.store(key_of(2), output_of("the real output")).empty());
  REQUIRE(store.store(key_of(3), output_of("mine")).empty());
  const auto torn = store.entry_path(key_of(1));
  fs::resize_file(torn, fs::file_size(torn) / 2);
  CHECK_FALSE(store.find(key_of(1), std::nullopt));
  CHECK(fs::exists(torn));

  // Valid JSON, but the output is not the one hashed.
  const auto tampered = store.entry_path(key_of(2));
  auto text = *io::read_whole_file(tampered);
  text.replace(text.find("the real output"), 15, "the fake output");
  REQUIRE(io::write_private_file(tampered, text));
  CHECK_FALSE(store.find(key_of(2), std::nullopt));

  // Another key's whole entry copied under this key's name.
  fs::copy_file(store.entry_path(key_of(3)), store.entry_path(key_of(1)), fs::copy_options::overwrite_existing);
  CHECK_FALSE(store.find(key_of(1), std::nullopt));
  CHECK(store.find(key_of(3), std::nullopt));
}

TEST_CASE("result_store: keys that are not lowercase hex are refused so none escapes the directory", "[cache]") {
  temp_dir dir{"arun-cache"};
  const auto root = dir.root / "cache";
  io::result_store store(root.string(), 0);
  const auto good = key_of(1);
  for (const auto& bad : {std::string("../../../../etc/passwd0000000000"), std::string("0123456789abcde"),
                                std::string(129, 'a'), std::string("ABCDEF0123456789"), std::string("0123456789abcdef/x"),
                                std::string()}) {
    INFO(bad);
    CHECK_FALSE(io::result_store::valid_key(bad));
    const auto why = store.store(bad, output_of("x", "evil[0]"));
    CHECK_THAT(why, Catch::StartsWith("cannot store the cached output of evil[0] in " + root.string() + ": "));
    CHECK_FALSE(store.find(bad, std::nullopt));
  }
  CHECK_FALSE(fs::exists(root));
  CHECK(io::result_store::valid_key(good));
  CHECK(io::result_store::valid_key(std::string(16, 'f')));
  CHECK(io::result_store::valid_key(std::string(128, '0')));
}

TEST_CASE("result_store: a store that cannot write warns and leaves no temp file", "[cache]") {
  temp_dir dir{"arun-cache"};
  const auto blocker = dir.write("cache", "a file where the cache directory should be");
  io::result_store store(blocker, 0);
  CHECK_THAT(store.store(key_of(1), output_of("x")), Catch::StartsWith("cannot store the cached output of summary[0] in "));
  CHECK(store.stored_bytes() == 0);

  // The entry's name taken by a directory: the rename fails, the temp file goes.
  io::result_store other((dir.root / "c2").string(), 0);
  fs::create_directories(other.entry_path(key_of(1)));
  CHECK_FALSE(other.store(key_of(1), output_of("x")).empty());
  CHECK(temp_files_below(dir.root / "c2").empty());
}

TEST_CASE("result_store: forked processes storing the same keys at once leave only whole entries", "[cache]") {
  temp_dir dir{"arun-cache"};
  const auto root = (dir.root / "cache").string();
  constexpr int children = 4, stores = 50, keys = 6;
  // Outputs large enough that a torn write would be likely to show.
  const auto text_of = [](int child, int i) { return std::string(20000 + 997 * i, static_cast<char>('a' + child)); };
  std::vector<pid_t> pids;
  for (int c = 0; c < children; ++c) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int failures = 0;
      io::result_store store(root, 0);
      std::set<int> stored;
      for (int i = 0; i < stores; ++i) {
        const int k = (i + c) % keys;
        if (!store.store(key_of(k), output_of(text_of(c, i), "item[" + std::to_string(k) + "]")).empty()) ++failures;
        stored.insert(k);
        // Once a key has an entry, every reader sees a whole one, whoever wrote it last.
        for (int r : stored) {
          const auto hit = store.find(key_of(r), std::nullopt);
          if (!hit || hit->instance != "item[" + std::to_string(r) + "]" || hit->stdout_text.size() < 20000) ++failures;
        }
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (const auto pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  io::result_store store(root, 0);
  for (int k = 0; k < keys; ++k) {
    const auto hit = store.find(key_of(k), std::nullopt);
    REQUIRE(hit);
    bool known = false;
    for (int c = 0; c < children; ++c)
      for (int i = 0; i < stores; ++i) known = known || hit->stdout_text == text_of(c, i);
    CHECK(known);
  }
  std::string error;
  const auto all = store.list(error);
  CHECK(error.empty());
  CHECK(all.size() == keys);
  CHECK(std::none_of(all.begin(), all.end(), [](const auto& e) { return e.damaged; }));
  CHECK(temp_files_below(root).empty());
}

TEST_CASE("result_store: trim evicts the least recently used down to 90 percent and old temp files", "[cache]") {
  temp_dir dir{"arun-cache"};
  const auto root = (dir.root / "cache").string();
  io::result_store writer(root, 0);
  for (int k = 0; k < 10; ++k) REQUIRE(writer.store(key_of(k), output_of(std::string(1000, 'x'))).empty());
  const auto entry_bytes = fs::file_size(writer.entry_path(key_of(0)));
  const auto t0 = clock_type::now() - std::chrono::hours(24);
  // Key k last used at t0 + k minutes, except key 0, found (used) just now.
  for (int k = 0; k < 10; ++k) set_mtime(writer.entry_path(key_of(k)), t0 + std::chrono::minutes(k));
  REQUIRE(writer.find(key_of(0), std::nullopt));
  CHECK(mtime_of(writer.entry_path(key_of(0))) > t0 + std::chrono::hours(1));

  const auto shard = fs::path(writer.entry_path(key_of(0))).parent_path();
  const auto stale = (shard / ".tmp-1-1-0000000000000001").string();
  const auto live = (shard / ".tmp-1-1-0000000000000002").string();
  REQUIRE(io::write_private_file(stale, "crashed writer"));
  REQUIRE(io::write_private_file(live, "writer at work"));
  set_mtime(stale, clock_type::now() - std::chrono::hours(2));

  // A cap of 8 entries: 10 are over it, 90% of it holds 7.
  io::result_store store(root, 8 * entry_bytes);
  std::string error;
  const auto removed = store.trim(error);
  CHECK(error.empty());
  CHECK(removed.entries == 3);
  CHECK(removed.bytes == 3 * entry_bytes);
  for (int k = 1; k <= 3; ++k) CHECK_FALSE(fs::exists(store.entry_path(key_of(k))));
  for (int k : {0, 4, 5, 9}) CHECK(fs::exists(store.entry_path(key_of(k))));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  std::uint64_t total = 0;
  for (const auto& e : store.list(error)) total += e.bytes;
  CHECK(total <= 8 * entry_bytes * 9 / 10);

  // Under the cap, or with none: nothing goes.
  CHECK(store.trim(error).entries == 0);
  CHECK(io::result_store(root, 0).trim(error).entries == 0);
  CHECK(io::result_store((dir.root / "missing").string(), 1).trim(error).entries == 0);
  CHECK(error.empty());
}

TEST_CASE("result_store: list flags damaged entries and remove_if removes what it picks", "[cache]") {
  temp_dir dir{"arun-cache"};
  io::result_store store((dir.root / "cache").string(), 0);
  std::string error;
  CHECK(store.list(error).empty());  // no cache yet: empty, no error
  CHECK(error.empty());
  REQUIRE(store.store(key_of(1), output_of("one", "a[0]")).empty());
  REQUIRE(store.store(key_of(2), output_of("two", "b[0]")).empty());
  REQUIRE(store.store(key_of(3), output_of("three", "b[1]")).empty());
  REQUIRE(io::write_private_file(store.entry_path(key_of(3)), "{\"format\":1,\"key\":"));
  const auto now = clock_type::now();
  set_mtime(store.entry_path(key_of(1)), now - std::chrono::minutes(5));
  set_mtime(store.entry_path(key_of(2)), now - std::chrono::minutes(1));
  set_mtime(store.entry_path(key_of(3)), now - std::chrono::minutes(9));
  io::write_private_file((dir.root / "cache" / "results" / "zz-not-a-shard").string(), "ignored");

  const auto all = store.list(error);
  CHECK(error.empty());
  REQUIRE(all.size() == 3);
  CHECK(all[0].key == key_of(2));  // most recently used first
  CHECK(all[1].key == key_of(1));
  CHECK(all[2].key == key_of(3));
  CHECK_FALSE(all[0].damaged);
  CHECK(all[0].instance == "b[0]");
  CHECK(all[0].recipe == "summarize");
  CHECK(all[0].session == "20260101-abc");
  CHECK(all[0].duration == std::chrono::milliseconds(1234));
  CHECK(all[0].bytes == fs::file_size(store.entry_path(key_of(2))));
  CHECK(all[0].path == store.entry_path(key_of(2)));
  CHECK(all[2].damaged);

  const auto removed = store.remove_if([](const auto& e) { return e.damaged || e.instance == "a[0]"; }, error);
  CHECK(error.empty());
  CHECK(removed.entries == 2);
  CHECK(removed.bytes == all[1].bytes + all[2].bytes);
  const auto left = store.list(error);
  REQUIRE(left.size() == 1);
  CHECK(left[0].key == key_of(2));
}

TEST_CASE("result_store: digest_files matches star and double star globs in sorted path order", "[cache]") {
  temp_dir dir{"arun-digest"};
  dir.write("b.txt", "bee");
  dir.write("a.txt", "ay");
  dir.write("notes.md", "no");
  dir.write(".hidden.txt", "hidden");
  dir.write("top.py", "top");
  dir.write("pkg/sub/deep.py", "deep");
  dir.write("pkg/mid.txt", "mid");
  dir.write(".git/hook.py", "tooling");
  fs::create_directories(dir.root / "dir.py");  // a directory is never a match
  const auto h = [](const std::string& s) { return io::sha256_hex(s); };

  CHECK(digest({"*.txt"}, dir.root) == "glob *.txt\na.txt " + h("ay") + "\nb.txt " + h("bee") + "\n");
  CHECK(digest({"**/*.py"}, dir.root) == "glob **/*.py\npkg/sub/deep.py " + h("deep") + "\ntop.py " + h("top") + "\n");
  CHECK(digest({"pkg/**"}, dir.root) ==
        "glob pkg/**\npkg/mid.txt " + h("mid") + "\npkg/sub/deep.py " + h("deep") + "\n");
  CHECK(digest({".*.txt", "?.txt"}, dir.root) == "glob .*.txt\n.hidden.txt " + h("hidden") + "\nglob ?.txt\na.txt " +
                                                     h("ay") + "\nb.txt " + h("bee") + "\n");
  CHECK(digest({"[ab].txt", "./pkg/mid.txt"}, dir.root) == "glob [ab].txt\na.txt " + h("ay") + "\nb.txt " + h("bee") +
                                                               "\nglob ./pkg/mid.txt\npkg/mid.txt " + h("mid") + "\n");
  const auto absolute = (dir.root / "pkg" / "*.txt").string();
  CHECK(digest({absolute}, "/elsewhere") ==
        "glob " + absolute + "\n" + (dir.root / "pkg" / "mid.txt").string() + " " + h("mid") + "\n");

  // A symlink to a file counts (with the file's bytes); one to a directory is not walked by **.
  fs::create_symlink(dir.root / "a.txt", dir.root / "link.txt");
  fs::create_directory_symlink(dir.root / "pkg", dir.root / "pkg" / "sub" / "loop");
  CHECK(digest({"link.txt"}, dir.root) == "glob link.txt\nlink.txt " + h("ay") + "\n");
  CHECK(digest({"**/*.py"}, dir.root) == "glob **/*.py\npkg/sub/deep.py " + h("deep") + "\ntop.py " + h("top") + "\n");
}

TEST_CASE("result_store: digest_files does not depend on how the directory was created", "[cache]") {
  temp_dir one{"arun-digest"}, two{"arun-digest"};
  const std::vector<std::string> names = {"m.txt", "a.txt", "z.txt", "c/x.txt", "b.txt"};
  for (const auto& n : names) one.write(n, "content of " + n);
  for (auto it = names.rbegin(); it != names.rend(); ++it) two.write(*it, "content of " + *it);
  CHECK(digest({"*.txt", "**/x.txt"}, one.root) == digest({"*.txt", "**/x.txt"}, two.root));
}

TEST_CASE("result_store: digest_files changes with a matched file and not with an unrelated one", "[cache]") {
  temp_dir dir{"arun-digest"};
  dir.write("src/a.py", "print(1)");
  dir.write("README.md", "readme");
  const auto before = digest({"src/*.py"}, dir.root);
  dir.write("README.md", "edited readme");
  dir.write("src/a.pyc", "bytecode");
  CHECK(digest({"src/*.py"}, dir.root) == before);
  dir.write("src/a.py", "print(2)");
  CHECK(digest({"src/*.py"}, dir.root) != before);
  const auto edited = digest({"src/*.py"}, dir.root);
  dir.write("src/b.py", "print(3)");
  CHECK(digest({"src/*.py"}, dir.root) != edited);
}

TEST_CASE("result_store: digest_files warns about a glob that matches nothing", "[cache]") {
  temp_dir dir{"arun-digest"};
  dir.write("a.txt", "ay");
  std::vector<std::string> warnings;
  std::string error;
  const auto d = digest({"*.rs", "missing/**/*.txt", "a.txt"}, dir.root, warnings, error);
  CHECK(error.empty());
  CHECK(d == "glob *.rs: no match\nglob missing/**/*.txt: no match\nglob a.txt\na.txt " + io::sha256_hex("ay") + "\n");
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] == "cache.files '*.rs' matches no file in " + dir.root.string());
  CHECK(warnings[1] == "cache.files 'missing/**/*.txt' matches no file in " + dir.root.string());
}

TEST_CASE("result_store: digest_files fails on a file it cannot read", "[cache]") {
  temp_dir dir{"arun-digest"};
  const auto secret = dir.write("secret.txt", "no");
  dir.write("open.txt", "yes");
  fs::permissions(dir.root, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  ::chmod(secret.c_str(), 0);
  const auto fails_on_secret = [&] {
    std::vector<std::string> warnings;
    std::string error;
    const auto d = digest({"*.txt"}, dir.root, warnings, error);
    return d.empty() && error == "cannot read " + secret + ": Permission denied";
  };
  if (::geteuid() != 0) {
    CHECK(fails_on_secret());
  } else {
    // Root reads a mode 000 file anyway: check as nobody, in a child that gives up root.
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const bool dropped = ::setgid(65534) == 0 && ::setuid(65534) == 0;
      ::_exit(dropped && fails_on_secret() ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  ::chmod(secret.c_str(), 0600);
}

TEST_CASE("result_store: default_cache_dir prefers ARUN_CACHE_DIR then XDG_CACHE_HOME then HOME", "[cache]") {
  const auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto arun_dir = saved("ARUN_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  ::setenv("ARUN_CACHE_DIR", "/a", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  CHECK(io::default_cache_dir() == "/a");
  ::setenv("ARUN_CACHE_DIR", "", 1);
  CHECK(io::default_cache_dir() == "/x/arun");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(io::default_cache_dir() == "/h/.cache/arun");
  const auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) ::setenv(name, v->c_str(), 1);
    else ::unsetenv(name);
  };
  restore("ARUN_CACHE_DIR", arun_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST_CASE("result_store: parse_age reads durations as every field does and explains the rest", "[cache]") {
  using std::chrono::seconds;
  std::string why;
  CHECK(io::parse_age("90", why) == seconds(90));
  CHECK(io::parse_age("90s", why) == seconds(90));
  CHECK(io::parse_age("15m", why) == seconds(900));
  CHECK(io::parse_age("12h", why) == seconds(43200));
  CHECK(io::parse_age("7d", why) == seconds(604800));
  CHECK(io::parse_age("2w", why) == seconds(1209600));
  CHECK(io::parse_age("1h30m", why) == seconds(5400));
  CHECK(io::parse_age("1.5h", why) == seconds(5400));
  CHECK(io::parse_age("500ms", why) == seconds(1));  // whole seconds, rounded up
  CHECK(why.empty());
  for (const char* bad : {"7x", "", "d", "-5", "7 d", "7D", " 7d", "7dd", "1.h", ".5s"}) {
    INFO(bad);
    why.clear();
    CHECK_FALSE(io::parse_age(bad, why));
    CHECK(why == "'" + std::string(bad) + "': expected a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m, 7d "
                                          "(at most 100 years)");
  }
  CHECK_FALSE(io::parse_age("0", why));
  CHECK(why == "'0': must be more than zero, such as 7d");
  CHECK_FALSE(io::parse_age("0d", why));
  CHECK_FALSE(io::parse_age("99999999999999999999999w", why));
  CHECK_THAT(why, Catch::Contains("at most 100 years"));
  CHECK_FALSE(io::parse_age("5300w", why));
  CHECK(io::parse_age("5200w", why) == seconds(5200LL * 7 * 86400));
}

TEST_CASE("result_store: an output longer than the run keeps is no hit", "[cache]") {
  arun::test::temp_dir dir{"arun-result-store-limit"};
  arun::io::result_store store(dir.root.string(), 0);
  arun::cached_output out;
  out.stdout_text = std::string(100, 'x');
  out.instance = "a";
  const auto key = store.hash("long output");
  REQUIRE(store.store(key, out).empty());
  CHECK(store.find(key, std::nullopt));
  store.limit_output(10);
  CHECK_FALSE(store.find(key, std::nullopt));
  store.limit_output(100);
  CHECK(store.find(key, std::nullopt));
}
