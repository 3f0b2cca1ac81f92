// The private Slurm cluster the slurm executor's tests run on (support/slurm_cluster.hpp): it
// runs batch jobs, honours licenses and scancel, and leaves nothing behind, not even the
// background process a job left running. Without Slurm installed each test warns and passes.
#include <catch2/catch.hpp>

#include "process_checks.hpp"
#include "slurm_cluster.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

using namespace std::chrono_literals;
using arun::test::leftover_processes;
using arun::test::process_alive;
using arun::test::slurm_cluster;
namespace fs = std::filesystem;

namespace {

bool slurm_missing() {
  const auto why = slurm_cluster::unavailable_reason();
  if (why.empty()) return false;
  WARN("skipped: " << why);
  return true;
}

// Whole file, or empty. read(2), not std::ifstream: that throws when a /proc file's process
// ends while it is read.
std::string slurp(const fs::path& p) {
  std::string text;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

// A bash script (the job), made executable; returns its path.
std::string write_script(const fs::path& dir, const std::string& name, const std::string& body) {
  fs::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << "#!/bin/bash\n" << body;
  fs::permissions(p, fs::perms::owner_all);
  return p.string();
}

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// sbatch --parsable ARGS; returns the job id ("ID" or "ID;cluster").
std::string submit(const slurm_cluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = c.run_client(argv);
  INFO("sbatch: " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  REQUIRE(!id.empty());
  return id;
}

bool in_queue(const slurm_cluster& c, const std::string& id) {
  const auto q = c.queue();
  return std::find(q.begin(), q.end(), id) != q.end();
}

// Daemons of a cluster found by what names its directory: the cwd every one of them inherits
// from the fixture, or the -f CONF on the command line. Zombies do not count.
std::vector<std::string> slurm_processes_of(const std::string& dir) {
  std::vector<std::string> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* d = ::readdir(proc)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    const std::string base = std::string("/proc/") + d->d_name;
    const std::string stat = slurp(base + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') continue;
    const std::string comm = stat.substr(stat.find('(') + 1, close - stat.find('(') - 1);
    if (comm.rfind("slurm", 0) != 0) continue;
    std::error_code ec;
    const std::string cwd = fs::read_symlink(base + "/cwd", ec).string();
    const std::string cmdline = slurp(base + "/cmdline");
    if (cwd.rfind(dir, 0) == 0 || cmdline.find(dir) != std::string::npos) found.push_back(std::string(d->d_name) + " " + comm);
  }
  ::closedir(proc);
  return found;
}

double read_time(const fs::path& p) {
  const auto text = slurp(p);
  return text.empty() ? 0.0 : std::stod(text);
}

}  // namespace

TEST_CASE("slurm cluster runs a batch job that writes its output and exit marker") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster;
    const auto work = cluster.dir() / "work";
    const auto script = write_script(work, "job.sh",
                                     "echo \"hello from job $SLURM_JOB_ID\"\n"
                                     "echo 'exiting with 3' > \"$1\"\n"
                                     "exit 3\n");
    const auto id = submit(cluster, {"-o", (work / "out.txt").string(), "-D", work.string(), script,
                                     (work / "marker").string()});
    REQUIRE(wait_for([&] { return !in_queue(cluster, id); }, 15s));
    CHECK(slurp(work / "out.txt") == "hello from job " + id + "\n");
    CHECK(slurp(work / "marker") == "exiting with 3\n");
    // No accounting (sacct) here, but the controller keeps a finished job for MinJobAge.
    const auto show = cluster.run_client({"scontrol", "show", "job", id});
    CHECK(show.exit_code == 0);
    CHECK_THAT(show.out, Catch::Contains("JobState=FAILED") && Catch::Contains("ExitCode=3:0"));
  }
  CHECK(leftover_processes().empty());
}

TEST_CASE("slurm cluster ends a job's background orphan and leaves no slurm process behind") {
  if (slurm_missing()) return;
  std::string dir;
  pid_t orphan = 0;
  {
    slurm_cluster cluster;
    dir = cluster.dir().string();
    CHECK(slurm_processes_of(dir).size() >= 2);  // the check below would see the daemons
    const auto work = cluster.dir() / "work";
    const auto script = write_script(work, "orphan.sh", "sleep 300 &\necho $! > \"$1\"\nexit 0\n");
    const auto id = submit(cluster, {"-o", "/dev/null", script, (work / "orphan.pid").string()});
    REQUIRE(wait_for([&] { return !in_queue(cluster, id); }, 15s));
    orphan = std::stoi(slurp(work / "orphan.pid"));
    // proctrack/pgid ends the script's process group with the job (linuxproc would not).
    CHECK(wait_for([&] { return !process_alive(orphan); }, 2s));
  }
  CHECK(!process_alive(orphan));
  CHECK(slurm_processes_of(dir).empty());
  CHECK(!fs::exists(dir));
  CHECK(leftover_processes().empty());
}

TEST_CASE("slurm cluster runs jobs that need its only license one after the other") {
  if (slurm_missing()) return;
  {
    slurm_cluster::options opts;
    opts.licenses = {{"claude", 1}, {"codex", 2}};
    slurm_cluster cluster(opts);
    CHECK_THAT(slurp(cluster.conf_path()), Catch::Contains("\nLicenses=claude:1,codex:2\n"));
    const auto lic = cluster.run_client({"scontrol", "show", "license", "claude"});
    CHECK_THAT(lic.out, Catch::Contains("LicenseName=claude") && Catch::Contains("Total=1"));

    const auto work = cluster.dir() / "work";
    const auto script = write_script(work, "licensed.sh",
                                     "date +%s.%N > \"$1.start\"\nsleep 1\ndate +%s.%N > \"$1.end\"\n");
    for (const char* name : {"a", "b"})
      submit(cluster, {"-L", "claude:1", "-o", "/dev/null", script, (work / name).string()});
    REQUIRE(cluster.wait_queue_empty(20s));
    const double a_start = read_time(work / "a.start"), a_end = read_time(work / "a.end");
    const double b_start = read_time(work / "b.start"), b_end = read_time(work / "b.end");
    INFO("a: " << std::fixed << a_start << " - " << a_end << ", b: " << b_start << " - " << b_end);
    REQUIRE(a_start > 0);
    REQUIRE(b_start > 0);
    CHECK((a_end <= b_start || b_end <= a_start));
  }
  CHECK(leftover_processes().empty());
}

TEST_CASE("slurm cluster removes a running job from the queue on scancel") {
  if (slurm_missing()) return;
  {
    slurm_cluster cluster;
    const auto work = cluster.dir() / "work";
    const auto script = write_script(work, "long.sh",
                                     "trap 'echo TERM > \"$1.term\"; exit 143' TERM\n"
                                     "echo started > \"$1\"\nsleep 300 &\nwait\n");
    const auto started = work / "started";
    const auto id = submit(cluster, {"-o", "/dev/null", script, started.string()});
    REQUIRE(wait_for([&] { return fs::exists(started); }, 15s));
    const auto state = cluster.run_client({"squeue", "-h", "-j", id, "-o", "%T"});
    CHECK(state.out == "RUNNING\n");
    const auto cancel = cluster.run_client({"scancel", id});
    CHECK(cancel.exit_code == 0);
    CHECK(wait_for([&] { return !in_queue(cluster, id); }, 10s));
    // A plain scancel is graceful: the batch script gets SIGTERM first (SIGKILL after KillWait).
    CHECK(slurp(work / "started.term") == "TERM\n");
    const auto show = cluster.run_client({"scontrol", "show", "job", id});
    CHECK_THAT(show.out, Catch::Contains("JobState=CANCELLED"));
    CHECK(cluster.wait_queue_empty(std::chrono::seconds(10)));  // a job leaves the queue a moment after its wrapper wrote its result
  }
  CHECK(leftover_processes().empty());
}
