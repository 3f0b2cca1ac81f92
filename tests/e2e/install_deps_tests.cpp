// tools/install-deps against fake dpkg-query / apt-get / apt-cache / dpkg-deb / id on PATH: no
// real packages move, and valijson is "unpacked" into a temporary XDG_CACHE_HOME.
#include <catch2/catch.hpp>

#include "process/supervisor.hpp"
#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"
#include "test_paths.hpp"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct fake_system {
  fs::path dir = fs::temp_directory_path() / ("arun-deps-" + std::to_string(::getpid()));
  fs::path apt_log = dir / "apt-get.log";
  fs::path cache;
  fs::path valijson;
  fs::path candidate_file = dir / "candidate";
  // What arun includes of valijson (src/io/recipe/valijson_config.hpp).
  std::string headers = "validator.hpp schema.hpp schema_parser.hpp validation_results.hpp adapters/boost_json_adapter.hpp";

  // `missing`: the one package dpkg-query reports as not installed (empty: none). `unpacked`:
  // valijson's headers are in the cache already, as on every run after the first.
  // `cache_name`: the folder XDG_CACHE_HOME names, below the fakes' folder.
  fake_system(const std::string& missing, int uid, bool unpacked = true, const std::string& cache_name = "cache")
      : cache(dir / cache_name), valijson(cache / "arun" / "valijson") {
    fs::create_directories(dir);
    script("dpkg-query", "shift 2\nfor p; do [ \"$p\" = '" + missing +
                             "' ] && echo \"$p unknown ok not-installed\" || echo \"$p install ok installed\"; done\n");
    // `apt-get download` leaves the package file in the current folder, as the real one does.
    script("apt-get", "echo \"$*\" >> '" + apt_log.string() + "'\n"
                      "[ \"$1\" = download ] && for a; do case $a in libvalijson-dev=*) "
                      ": > \"libvalijson-dev_${a#*=}_all.deb\";; esac; done\nexit 0\n");
    script("apt-cache", "v=$(cat '" + candidate_file.string() + "')\necho \"  Candidate: $v\"\n");
    script("dpkg-deb", "[ \"$1\" = -x ] || exit 2\nmkdir -p \"$3/usr/include/valijson/adapters\" "
                       "\"$3/usr/share/doc/libvalijson-dev\"\nfor h in " + headers +
                       "; do echo '// fake' > \"$3/usr/include/valijson/$h\"; done\n"
                       "echo BSD-2-clause > \"$3/usr/share/doc/libvalijson-dev/copyright\"\n");
    script("id", "echo " + std::to_string(uid) + "\n");
    set_candidate("1.0+repack-2");
    if (unpacked) {
      fs::create_directories(valijson / "include" / "valijson" / "adapters");
      std::istringstream names(headers);
      for (std::string h; names >> h;) std::ofstream(valijson / "include" / "valijson" / h) << "// fake\n";
      std::ofstream(valijson / "version") << "1.0+repack-2\n";
      for (const auto& d : {cache, cache / "arun", valijson}) ::chmod(d.c_str(), 0700);
    }
  }
  ~fake_system() { fs::remove_all(dir); }

  void script(const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << "#!/bin/sh\n" << body;
    fs::permissions(dir / name, fs::perms::owner_all);
  }

  void set_candidate(const std::string& version) { std::ofstream(candidate_file) << version; }

  // Older than apt's lists: install-deps asks apt for its candidate again.
  void age_version_file() const {
    fs::last_write_time(valijson / "version", fs::file_time_type::clock::now() - std::chrono::hours(24 * 365 * 30));
  }

  arun::io::process_result run(const std::vector<std::string>& args = {}) const {
    arun::io::process_spec spec;
    spec.launch.argv = {"/bin/bash", std::string(ARUN_SOURCE_DIR) + "/tools/install-deps"};
    spec.launch.argv.insert(spec.launch.argv.end(), args.begin(), args.end());
    spec.launch.env = arun::io::build_step_environment(
        arun::io::current_environment(),
        {{"PATH", dir.string() + ":/usr/bin:/bin"}, {"XDG_CACHE_HOME", cache.string()}});
    return arun::test::run_sync(arun::io::run_process(std::move(spec)));
  }

  std::string apt_calls() const { return read_file(apt_log); }
};

}  // namespace

TEST_CASE("install-deps does nothing when every package is present") {
  fake_system sys("", 0);
  const auto r = sys.run();
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err.text, Catch::Contains("all 29 packages present"));
  CHECK(sys.apt_calls().empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps updates and installs only the missing packages as root") {
  fake_system sys("libcli11-dev", 0);
  const auto r = sys.run();
  CHECK(r.exit_code == 0);
  CHECK(sys.apt_calls() == "update -q\ninstall -y -q --no-install-recommends libcli11-dev\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps names the missing packages and asks for root when not root") {
  fake_system sys("catch2", 1000);
  const auto r = sys.run();
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err.text, Catch::Contains("missing packages: catch2"));
  CHECK_THAT(r.err.text, Catch::Contains("run as root"));
  CHECK(sys.apt_calls().empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps --build asks only for what building arun needs") {
  fake_system sys("catch2", 1000);
  auto r = sys.run({"--build"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err.text, Catch::Contains("all 10 packages present"));
  fake_system sys2("libcli11-dev", 1000);
  r = sys2.run({"--build"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err.text, Catch::Contains("missing packages: libcli11-dev"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps --list prints the apt packages of a set, without libvalijson-dev") {
  fake_system sys("", 1000);
  const auto build = sys.run({"--list", "--build"});
  CHECK(build.exit_code == 0);
  CHECK(arun::test::occurrences(build.out.text, "\n") == 10);
  CHECK_THAT(build.out.text, Catch::StartsWith("libboost1.81-dev\n") && Catch::Contains("\nccache\n"));
  const auto all = sys.run({"--list"});
  CHECK(arun::test::occurrences(all.out.text, "\n") == 29);
  CHECK_THAT(all.out.text, Catch::Contains("\nslurmd\n"));
  CHECK_THAT(all.out.text + build.out.text, !Catch::Contains("valijson"));
  CHECK(sys.apt_calls().empty());
  const auto where = sys.run({"--valijson-dir"});
  CHECK(where.out.text == sys.valijson.string() + "\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps unpacks valijson's headers into a private cache once, without installing it") {
  fake_system sys("", 1000, false);
  auto r = sys.run({"--build"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err.text, Catch::Contains("unpacking libvalijson-dev 1.0+repack-2"));
  // Downloaded (no root needed), never installed: no `apt-get install`.
  CHECK(sys.apt_calls() == "download -q libvalijson-dev=1.0+repack-2\n");
  CHECK(fs::exists(sys.valijson / "include" / "valijson" / "validator.hpp"));
  CHECK(read_file(sys.valijson / "version") == "1.0+repack-2\n");
  CHECK(read_file(sys.valijson / "copyright") == "BSD-2-clause\n");
  struct stat st {};
  REQUIRE(::stat((sys.cache / "arun").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // Nothing but the unpacked folder and the lock is left in the cache.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(sys.cache / "arun")) ++entries;
  CHECK(entries == 2);
  // The second run finds it and asks apt nothing.
  r = sys.run({"--build"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err.text, !Catch::Contains("unpacking"));
  CHECK(sys.apt_calls() == "download -q libvalijson-dev=1.0+repack-2\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps replaces the cached valijson when Debian's version changes") {
  fake_system sys("", 1000);
  // apt's lists are newer than the cache: the candidate is asked for and is new.
  sys.age_version_file();
  sys.set_candidate("1.0+repack-2+deb12u1");
  auto r = sys.run({"--build"});
  CHECK(r.exit_code == 0);
  CHECK(sys.apt_calls() == "download -q libvalijson-dev=1.0+repack-2+deb12u1\n");
  CHECK(read_file(sys.valijson / "version") == "1.0+repack-2+deb12u1\n");
  // The same candidate again: nothing is fetched.
  sys.age_version_file();
  r = sys.run({"--build"});
  CHECK(r.exit_code == 0);
  CHECK(sys.apt_calls() == "download -q libvalijson-dev=1.0+repack-2+deb12u1\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps refuses a valijson cache another user can write") {
  for (const char* which : {"arun", "arun/valijson"}) {
    fake_system sys("", 1000);
    ::chmod((sys.cache / which).c_str(), 0770);
    const auto r = sys.run({"--build"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err.text, Catch::Contains("refusing " + (sys.cache / which).string() +
                                           ": others can write it (mode 770)"));
    CHECK(sys.apt_calls().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps says how to get apt's lists when it knows no valijson") {
  fake_system sys("", 1000, false);
  sys.set_candidate("(none)");
  auto r = sys.run({"--build"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err.text, Catch::Contains("apt knows no libvalijson-dev: run 'apt-get update' as root"));
  // As root it updates the lists itself and tries again.
  fake_system root("", 0, false);
  root.set_candidate("(none)");
  r = root.run({"--build"});
  CHECK(r.exit_code == 1);
  CHECK(root.apt_calls() == "update -q\n");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps refuses links and writable files in the valijson cache, and a writable folder above it") {
  {
    fake_system sys("", 1000);
    fs::create_symlink("/etc/passwd", sys.valijson / "include" / "valijson" / "planted.hpp");
    const auto r = sys.run({"--build"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err.text, Catch::Contains("planted.hpp is a link, another user's or writable by others"));
  }
  {
    fake_system sys("", 1000);
    ::chmod((sys.valijson / "include" / "valijson" / "schema.hpp").c_str(), 0666);
    CHECK(sys.run({"--build"}).exit_code == 1);
  }
  {
    // A folder others can write anywhere above the cache (not sticky): refused, before apt is asked.
    fake_system sys("", 1000);
    ::chmod(sys.dir.c_str(), 0777);
    const auto r = sys.run({"--build"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err.text, Catch::Contains("refusing " + sys.dir.string() + ": others can write it (mode 777)"));
    CHECK(sys.apt_calls().empty());
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps unpacks valijson again when a header arun includes is missing") {
  fake_system sys("", 1000);
  fs::remove(sys.valijson / "include" / "valijson" / "adapters" / "boost_json_adapter.hpp");
  const auto r = sys.run({"--build"});
  CHECK(r.exit_code == 0);
  CHECK(sys.apt_calls() == "download -q libvalijson-dev=1.0+repack-2\n");
  CHECK(fs::exists(sys.valijson / "include" / "valijson" / "adapters" / "boost_json_adapter.hpp"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps asks apt once after its lists change, not on every run") {
  fake_system sys("", 1000);
  sys.age_version_file();
  fs::remove(sys.dir / "apt-cache");
  sys.script("apt-cache", "echo asked >> '" + (sys.dir / "asked").string() + "'\necho '  Candidate: 1.0+repack-2'\n");
  CHECK(sys.run({"--build"}).exit_code == 0);
  CHECK(sys.run({"--build"}).exit_code == 0);
  CHECK(read_file(sys.dir / "asked") == "asked\n");
  CHECK(sys.apt_calls().empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("install-deps unpacks into a cache whose path has quotes and spaces, under any umask") {
  fake_system sys("", 1000, false, "it's a \"cache\" $(x) '; rm -rf x '");
  auto spec_umask = ::umask(002);
  const auto r = sys.run({"--build"});
  ::umask(spec_umask);
  CHECK(r.exit_code == 0);
  CHECK(read_file(sys.valijson / "version") == "1.0+repack-2\n");
  // What it made passes its own check the next time.
  CHECK(sys.run({"--build"}).exit_code == 0);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(sys.cache / "arun")) ++entries;
  CHECK(entries == 2);  // valijson/ and the lock
  CHECK(arun::test::leftover_processes().empty());
}
