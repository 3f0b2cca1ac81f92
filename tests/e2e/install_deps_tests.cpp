// tools/install-deps against fake dpkg-query / apt-get / id on PATH: no real packages move.
#include <catch2/catch.hpp>

#include "process/supervisor.hpp"
#include "process_checks.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

struct fake_system {
  fs::path dir = fs::temp_directory_path() / ("arun-deps-" + std::to_string(::getpid()));
  fs::path apt_log = dir / "apt-get.log";

  // `missing`: the one package dpkg-query reports as not installed (empty: none).
  fake_system(const std::string& missing, int uid) {
    fs::create_directories(dir);
    script("dpkg-query", "for p; do :; done\n[ \"$p\" = '" + missing +
                             "' ] && { echo 'unknown ok not-installed'; exit 0; }\necho 'install ok installed'\n");
    script("apt-get", "echo \"$*\" >> '" + apt_log.string() + "'\n");
    script("id", "echo " + std::to_string(uid) + "\n");
  }
  ~fake_system() { fs::remove_all(dir); }

  void script(const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << "#!/bin/sh\n" << body;
    fs::permissions(dir / name, fs::perms::owner_all);
  }

  arun::io::process_result run(const std::vector<std::string>& args = {}) const {
    arun::io::process_spec spec;
    spec.launch.argv = {"/bin/bash", ARUN_SOURCE_DIR "/tools/install-deps"};
    spec.launch.argv.insert(spec.launch.argv.end(), args.begin(), args.end());
    spec.launch.env = arun::io::build_step_environment(arun::io::current_environment(),
                                                       {{"PATH", dir.string() + ":/usr/bin:/bin"}});
    return arun::test::run_sync(arun::io::run_process(std::move(spec)));
  }

  std::string apt_calls() const {
    std::ifstream in(apt_log);
    return {std::istreambuf_iterator<char>(in), {}};
  }
};

}  // namespace

TEST_CASE("install-deps does nothing when every package is present") {
  fake_system sys("", 0);
  const auto r = sys.run();
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err.text, Catch::Contains("all 30 packages present"));
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
  CHECK_THAT(r.err.text, Catch::Contains("all 11 packages present"));
  fake_system sys2("libcli11-dev", 1000);
  r = sys2.run({"--build"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err.text, Catch::Contains("missing packages: libcli11-dev"));
  CHECK(arun::test::leftover_processes().empty());
}
