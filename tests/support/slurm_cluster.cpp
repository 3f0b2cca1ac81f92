#include "slurm_cluster.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace arun::test {
namespace {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---------------------------------------------------------------- files and PATH

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string candidate = (d.empty() ? std::string(".") : d) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Whole file, or empty when unreadable. Plain read(2): reading /proc/PID/... of a process
// that ends meanwhile fails with ESRCH, which std::ifstream turns into an exception.
std::string read_file(const fs::path& p) {
  std::string text;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fd);
  return text;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw std::runtime_error("slurm_cluster: cannot write " + p.string());
}

// ---------------------------------------------------------------- /proc

struct proc_stat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t sid = 0;
  char state = '?';
  std::string comm;
  bool zombie() const { return state == 'Z' || state == 'X'; }
};

bool read_proc_stat(pid_t pid, proc_stat& p) {
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  int ppid = 0, pgrp = 0, sid = 0;
  if (std::sscanf(text.c_str() + close + 1, " %c %d %d %d", &p.state, &ppid, &pgrp, &sid) != 4) return false;
  p.pid = pid;
  p.ppid = ppid;
  p.sid = sid;
  p.comm = text.substr(open + 1, close - open - 1);
  return true;
}

std::vector<proc_stat> process_table() {
  std::vector<proc_stat> table;
  std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
  if (!proc) return table;
  while (const dirent* d = ::readdir(proc.get())) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    proc_stat p;
    if (read_proc_stat(static_cast<pid_t>(std::atoi(d->d_name)), p)) table.push_back(std::move(p));
  }
  return table;
}

std::string proc_cwd(pid_t pid) {
  std::error_code ec;
  const auto target = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
  return ec ? std::string() : target.string();
}

bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

// ---------------------------------------------------------------- processes

// The test runner may ignore or block signals (both survive exec): children start clean.
struct spawn_attributes {
  posix_spawnattr_t attr{};
  explicit spawn_attributes(bool new_session) {
    ::posix_spawnattr_init(&attr);
    sigset_t all, none;
    ::sigfillset(&all);
    ::sigemptyset(&none);
    ::posix_spawnattr_setsigdefault(&attr, &all);
    ::posix_spawnattr_setsigmask(&attr, &none);
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (new_session) flags |= POSIX_SPAWN_SETSID;
    ::posix_spawnattr_setflags(&attr, flags);
  }
  ~spawn_attributes() { ::posix_spawnattr_destroy(&attr); }
  spawn_attributes(const spawn_attributes&) = delete;
  spawn_attributes& operator=(const spawn_attributes&) = delete;
};

struct file_actions {
  posix_spawn_file_actions_t fa{};
  file_actions() { ::posix_spawn_file_actions_init(&fa); }
  ~file_actions() { ::posix_spawn_file_actions_destroy(&fa); }
  file_actions(const file_actions&) = delete;
  file_actions& operator=(const file_actions&) = delete;
};

// Starts `path` with stdin from /dev/null and stdout/stderr on the given descriptors (of this
// process); `cwd` empty keeps ours. Returns the pid, or -1 with errno set.
pid_t spawn(const std::string& path, const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& cwd, int out_fd, int err_fd, bool new_session) {
  file_actions fa;
  ::posix_spawn_file_actions_addopen(&fa.fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa.fa, out_fd, 1);
  ::posix_spawn_file_actions_adddup2(&fa.fa, err_fd, 2);
  if (!cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&fa.fa, cwd.c_str());
  spawn_attributes attr(new_session);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), &fa.fa, &attr.attr, args.data(), envp.data());
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Reaps `pid` if it has ended (then sets it to -1; also when it is not our child any more,
// e.g. someone else's waitpid(-1) took it). Returns whether it is gone.
bool try_reap(pid_t& pid, int* status = nullptr) {
  if (pid <= 0) return true;
  int st = 0;
  const pid_t r = ::waitpid(pid, &st, WNOHANG);
  if (r == 0) return false;
  if (r < 0 && errno == EINTR) return false;
  if (r == pid && status != nullptr) *status = st;
  pid = -1;
  return true;
}

// Whether a child has ended, without reaping it (the reaper thread may be reading the pid).
bool has_ended(pid_t pid) {
  if (pid <= 0) return true;
  siginfo_t si{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == pid;
}

// Polls until every pid is reaped or the deadline passes; never blocks in waitpid (a process
// stuck in the kernel must not hang a test). Returns whether all are gone.
bool reap_until(std::vector<pid_t*> pids, steady::time_point deadline) {
  for (;;) {
    bool all = true;
    for (pid_t* p : pids) all = try_reap(*p) && all;
    if (all) return true;
    if (steady::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

// ---------------------------------------------------------------- ports

// Free for a listening socket: bound without SO_REUSEADDR this also fails while connections
// linger in TIME_WAIT. Slurm's daemons bind INADDR_ANY.
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A random free port below the kernel's ephemeral range (32768+ here), so that no outgoing
// connection of a client is given it in the moment between our check and the daemon's bind.
// Random, not "bind port 0": two test processes starting clusters at the same moment are
// unlikely to draw the same one, and a clash is caught anyway (the loser's daemon exits
// and the constructor retries with new ports).
int pick_port(std::mt19937& rng, int avoid) {
  std::uniform_int_distribution<int> dist(20000, 32000);
  for (int i = 0; i < 200; ++i) {
    const int port = dist(rng);
    if (port != avoid && port_free(port)) return port;
  }
  throw std::runtime_error("slurm_cluster: no free port found in 20000-32000");
}

// Whether something listens on 127.0.0.1:port (a local connect is refused or accepted at once).
bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// ---------------------------------------------------------------- text

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string last_lines(const std::string& text, std::size_t n) {
  std::vector<std::string> kept;
  for (auto& line : split_lines(text)) {
    // Harmless on every start (SLURM.md): they would crowd out what explains a failure.
    if (line.find("pmix") != std::string::npos || line.find("MPI: Cannot create context") != std::string::npos)
      continue;
    kept.push_back(std::move(line));
  }
  std::string out;
  for (std::size_t i = kept.size() > n ? kept.size() - n : 0; i < kept.size(); ++i) out += kept[i] + "\n";
  return out;
}

// Variables that would point a client at another cluster or change what it prints or submits
// (a test run inside a Slurm job has plenty of them).
bool slurm_variable(const char* entry) {
  for (const char* prefix : {"SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_", "SCANCEL_"})
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

}  // namespace

// ================================================================ slurm_cluster

std::string slurm_cluster::unavailable_reason() {
  std::string missing;
  for (const char* tool : {"slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"})
    if (find_on_path(tool).empty()) missing += std::string(missing.empty() ? "" : ", ") + tool;
  if (!missing.empty())
    return "Slurm is not installed (not on PATH: " + missing + "); tools/install-deps installs it";
  // The daemons run as root (SlurmUser=root, SlurmdUser=root) to start jobs.
  if (::geteuid() != 0) return "the private Slurm cluster needs root (its daemons run as root)";
  return {};
}

slurm_cluster::slurm_cluster(options opts) : opts_(std::move(opts)) {
  if (auto why = unavailable_reason(); !why.empty()) throw std::runtime_error("slurm_cluster: " + why);
  // slurmd double-forks each slurmstepd, and a job's background processes outlive its script:
  // as a subreaper (the test main already is one) this process gets them all, can reap them
  // and can find them at teardown. Without it they would become init's, which does not reap
  // here (SLURM.md pitfall 5).
  int subreaper = 0;
  ::prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
  if (subreaper == 0) ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  std::string failures;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::string failure;
    if (start_once(failure)) {
      reaper_ = std::jthread([this](std::stop_token stop) { reap_loop(std::move(stop)); });
      return;
    }
    failures += "attempt " + std::to_string(attempt) + ": " + failure + "\n";
  }
  throw std::runtime_error("slurm_cluster: did not start\n" + failures);
}

// One try with fresh ports and a fresh directory. False (with everything cleaned up) when a
// daemon exits early, which is what a port taken in the meantime looks like; throws when the
// node does not become idle in time.
bool slurm_cluster::start_once(std::string& failure) {
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()) ^
                   static_cast<unsigned>(steady::now().time_since_epoch().count()));
  ctld_port_ = pick_port(rng, 0);
  slurmd_port_ = pick_port(rng, ctld_port_);
  // The node is named after the controller's port: a client that reached some other cluster's
  // controller on a port we thought free never sees our node idle.
  node_ = "node" + std::to_string(ctld_port_);

  std::string templ = (fs::temp_directory_path() / "arun-slurm-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "slurm_cluster: mkdtemp");
  dir_ = templ;

  const auto child_env = client_environment();
  auto start = [&](const std::string& tool, std::vector<std::string> args) {
    const std::string log = (dir_ / "log" / (tool + ".out")).string();
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "slurm_cluster: " + log);
    args.insert(args.begin(), tool);
    auto program = find_on_path(tool);
    // Through setpriv when there is one: the daemon dies with the test process, even when a
    // SIGKILL leaves no destructor to stop it (setpriv execs the daemon in its own place).
    if (const auto setpriv = find_on_path("setpriv"); !setpriv.empty()) {
      args.front() = program;
      args.insert(args.begin(), {"setpriv", "--pdeathsig", "KILL", "--"});
      program = setpriv;
    }
    // cwd: each slurmstepd inherits slurmd's, which is how the reaper recognises ours. Own
    // session: the daemons' helpers are recognised by it, and no terminal signal reaches them.
    const pid_t pid = spawn(program, args, child_env, dir_.string(), fd, fd, true);
    const int err = errno;
    ::close(fd);
    if (pid < 0) throw std::system_error(err, std::generic_category(), "slurm_cluster: spawn " + tool);
    return pid;
  };

  const auto deadline = steady::now() + opts_.start_timeout;
  bool listening = false;
  try {
    for (const auto* sub : {"etc", "state", "log", "run"}) fs::create_directories(dir_ / sub);
    fs::create_directories(dir_ / "spool" / node_);  // slurmd creates it late, logging an error first
    write_file(dir_ / "etc" / "plugstack.conf", "");
    write_file(conf_path(), render_conf());
    ctld_pid_ = start("slurmctld", {"-D", "-f", conf_path()});
    for (;;) {
      int status = 0;
      for (auto [pid, name] : {std::pair{&ctld_pid_, "slurmctld"}, std::pair{&slurmd_pid_, "slurmd"}}) {
        if ((pid == &ctld_pid_ || listening) && try_reap(*pid, &status)) {
          // Typically "fatal: ... Address already in use": the last lines say it.
          failure = std::string(name) + " exited (status " + std::to_string(decode_status(status)) + "): " +
                    last_lines(read_file(dir_ / "log" / (std::string(name) + ".out")), 2);
          break;
        }
      }
      if (!failure.empty()) break;
      // Clients retry a controller that is not there for many seconds: ask only once it listens.
      // (Probe only until then: each probe logs an error in slurmctld.log.)
      client_result r;
      if (!listening && accepts_connections(ctld_port_)) {
        listening = true;
        // slurmd only now: its first registration then succeeds, where one sent before the
        // controller listens is retried a second later.
        slurmd_pid_ = start("slurmd", {"-D", "-f", conf_path(), "-N", node_});
      }
      if (listening) {
        r = run_client({"sinfo", "-h", "-o", "%N %T"}, 2s);
        for (const auto& line : split_lines(r.out))
          if (line == node_ + " idle") return true;
      }
      if (steady::now() >= deadline) {
        failure = "node " + node_ + " not idle after " + std::to_string(opts_.start_timeout.count()) +
                  " ms (sinfo: " + r.out + r.err + ")\n" + log_tail();
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const bool timed_out = steady::now() >= deadline;
  stop_daemons(0ms);  // nothing to shut down gracefully: SIGKILL
  kill_leftovers(2s);
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (timed_out) throw std::runtime_error("slurm_cluster: " + failure);
  return false;
}

std::string slurm_cluster::render_conf() const {
  const std::string d = dir_.string();
  std::ostringstream c;
  c << "ClusterName=arun" << ctld_port_ << "\n"
    << "SlurmctldHost=localhost(127.0.0.1)\n"
    << "SlurmctldPort=" << ctld_port_ << "\n"
    << "SlurmdPort=" << slurmd_port_ << "\n"
    << "SlurmUser=root\nSlurmdUser=root\n"
    // No munge daemon: the cluster trusts every local client.
    << "AuthType=auth/none\nCredType=cred/none\n"
    << "StateSaveLocation=" << d << "/state\n"
    << "SlurmdSpoolDir=" << d << "/spool/%n\n"
    << "SlurmctldPidFile=" << d << "/run/slurmctld.pid\n"
    << "SlurmdPidFile=" << d << "/run/slurmd-%n.pid\n"
    << "SlurmctldLogFile=" << d << "/log/slurmctld.log\n"
    << "SlurmdLogFile=" << d << "/log/slurmd-%n.log\n"
    << "SlurmctldDebug=info\nSlurmdDebug=info\n"
    // proctrack/pgid, not linuxproc: a job's background processes stay in its script's process
    // group when the script exits, and pgid SIGKILLs that group when the job ends. linuxproc
    // walks parent links from slurmstepd, so it misses exactly those orphans (re-parented to
    // this subreaper): tried here, the job "completed" at once and its `sleep 300 &` kept
    // running until teardown (SLURM.md pitfall 4). pgid waits for the group to be empty
    // (SIGKILL, sleep 1 s, check again), so a job that leaves orphans ends ~1 s after its
    // script, and only because reap_loop reaps their zombies. Orphans that leave the group
    // (setsid) escape both; kill_leftovers ends them at teardown.
    << "ProctrackType=proctrack/pgid\n"
    << "TaskPlugin=task/none\n"
    << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
    << "SchedulerType=sched/backfill\n"
    // Pending jobs start at once instead of in 3 s batches (SLURM.md pitfall 2).
    << "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n"
    << "MpiDefault=none\n"
    << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
    << "JobCompType=jobcomp/none\n"
    << "ReturnToService=2\n"
    << "MailProg=/bin/true\n"  // the default /usr/bin/mail is not installed: an error at every start
    << "KillWait=" << opts_.kill_wait_seconds << "\n"
    << "MinJobAge=" << opts_.min_job_age_seconds << "\n"
    // An empty plugstack.conf keeps the package's /etc/slurm/plugstack.conf out.
    << "PlugStackConfig=" << d << "/etc/plugstack.conf\n";
  if (!opts_.licenses.empty()) {
    c << "Licenses=";
    const char* sep = "";
    for (const auto& [name, count] : opts_.licenses) {
      c << sep << name << ":" << count;
      sep = ",";
    }
    c << "\n";
  }
  // RealMemory must not exceed the machine's memory (SLURM.md pitfall 7).
  c << "NodeName=" << node_ << " NodeAddr=127.0.0.1 CPUs=" << opts_.cpus << " RealMemory=1000 State=UNKNOWN\n"
    // FORCE:32: up to 32 jobs share each CPU, so tests do not queue behind each other.
    << "PartitionName=debug Nodes=" << node_ << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:32\n";
  for (const auto& line : opts_.extra_conf) c << line << "\n";
  return c.str();
}

std::string slurm_cluster::conf_path() const { return (dir_ / "etc" / "slurm.conf").string(); }

std::vector<std::string> slurm_cluster::env() const { return {"SLURM_CONF=" + conf_path()}; }

std::vector<std::string> slurm_cluster::client_environment() const {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e)
    if (!slurm_variable(*e)) vars.emplace_back(*e);
  for (auto& e : env()) vars.push_back(std::move(e));
  return vars;
}

slurm_cluster::client_result slurm_cluster::run_client(const std::vector<std::string>& argv,
                                                        std::chrono::milliseconds timeout) const {
  client_result r;
  const std::string path = argv.empty() ? std::string() : find_on_path(argv[0]);
  if (path.empty()) {
    r.err = "slurm_cluster::run_client: not found on PATH: " + (argv.empty() ? std::string("(empty argv)") : argv[0]);
    return r;
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    r.err = std::string("pipe2: ") + std::strerror(errno);
    return r;
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    r.err = std::string("pipe2: ") + std::strerror(errno);
    ::close(out[0]);
    ::close(out[1]);
    return r;
  }
  pid_t pid = spawn(path, argv, client_environment(), "", out[1], err[1], false);
  const int spawn_errno = errno;
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    r.err = "spawn " + path + ": " + std::strerror(spawn_errno);
    return r;
  }

  // Read both pipes until EOF; on timeout kill the client and give the pipes a moment more.
  std::array<pollfd, 2> fds{{{out[0], POLLIN, 0}, {err[0], POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&r.out, &r.err};
  auto deadline = steady::now() + timeout;
  int open_pipes = 2;
  while (open_pipes > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (left <= 0) {
      if (r.timed_out) break;  // killed and still not closed: a grandchild holds the pipe
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      deadline = steady::now() + 1s;
      continue;
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left));
    if (n < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const auto got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (open_pipes > 0) ::kill(pid, SIGKILL);
  int status = 0;
  pid_t reaped;
  do reaped = ::waitpid(pid, &status, 0);
  while (reaped < 0 && errno == EINTR);
  r.exit_code = reaped == pid ? decode_status(status) : -1;
  return r;
}

std::vector<std::string> slurm_cluster::queue() const {
  const auto r = run_client({"squeue", "-h", "--array", "-o", "%i"});
  if (r.exit_code != 0)
    throw std::runtime_error("slurm_cluster: squeue failed (" + std::to_string(r.exit_code) + "): " + r.err);
  return split_lines(r.out);
}

bool slurm_cluster::wait_queue_empty(std::chrono::milliseconds timeout) const {
  const auto deadline = steady::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    const auto r = run_client({"squeue", "-h", "--array", "-o", "%i"}, std::max(left, std::chrono::milliseconds(100)));
    if (r.exit_code == 0 && split_lines(r.out).empty()) return true;
    if (steady::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

void slurm_cluster::cancel_all() const {
  auto ids = queue();
  if (ids.empty()) return;
  ids.insert(ids.begin(), "scancel");
  // Its exit code is not checked: a job that finished since squeue makes scancel complain.
  run_client(ids);
}

std::string slurm_cluster::log_tail(std::size_t lines) const {
  // In the foreground (-D) a daemon logs to stderr too: its .out repeats the .log without
  // timestamps, and only says more when the daemon failed before opening its log file.
  std::string out;
  for (const auto& [log, fallback] : {std::pair<std::string, std::string>{"slurmctld.log", "slurmctld.out"},
                                      {"slurmd-" + node_ + ".log", "slurmd.out"}}) {
    auto text = last_lines(read_file(dir_ / "log" / log), lines);
    const auto* name = &log;
    if (text.empty()) {
      text = last_lines(read_file(dir_ / "log" / fallback), lines);
      name = &fallback;
    }
    if (!text.empty()) out += "== " + *name + " ==\n" + text;
  }
  return out;
}

// ---------------------------------------------------------------- reaping and teardown

// Every slurmstepd ends up a child of this (subreaper) process, and so does every background
// process a job leaves behind. Nobody else reaps them: their zombies would pile up, and with
// proctrack/pgid a zombie still "is" in the job's process group, so the job would stay
// RUNNING/COMPLETING for minutes while slurmstepd re-checks with growing sleeps. So a thread
// reaps them, every 20 ms. It must not touch other children of the test (their owners wait
// for them), so it reaps only zombies in a session of this cluster: one a slurmstepd of this
// cluster (recognised by its cwd, inherited from slurmd) leads or led, or a daemon's own.
void slurm_cluster::reap_loop(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any wake;
  std::unique_lock lock(m);
  while (!stop.stop_requested()) {
    try {
      track_and_reap();
    } catch (...) {  // e.g. bad_alloc; an exception escaping a thread would end the test process
    }
    (void)wake.wait_for(lock, stop, 20ms, [] { return false; });
  }
}

void slurm_cluster::track_and_reap() {
  const pid_t self = ::getpid();
  const auto table = process_table();
  // Sessions live while any process is in them; forget the others so that a recycled pid
  // (pid_max is 32768 here) never makes a stranger's session look like ours.
  std::set<pid_t> alive_sessions, next;
  for (const auto& p : table) alive_sessions.insert(p.sid);
  for (const pid_t s : sessions_)
    if (alive_sessions.contains(s)) next.insert(s);
  for (const pid_t d : {ctld_pid_, slurmd_pid_})
    if (d > 0) next.insert(d);
  for (const auto& p : table)
    if (p.ppid == self && !p.zombie() && p.comm == "slurmstepd" && under(proc_cwd(p.pid), dir_.string()))
      next.insert(p.sid);
  sessions_ = std::move(next);
  for (const auto& p : table)
    if (p.ppid == self && p.zombie() && sessions_.contains(p.sid) && p.pid != ctld_pid_ && p.pid != slurmd_pid_)
      ::waitpid(p.pid, nullptr, WNOHANG);
}

// SIGTERM both daemons, wait, then SIGKILL. slurmctld stops at once; slurmd does not while a
// slurmstepd of its is alive (SLURM.md), which kill_leftovers deals with.
void slurm_cluster::stop_daemons(std::chrono::milliseconds patience) noexcept {
  for (const pid_t pid : {ctld_pid_, slurmd_pid_})
    if (pid > 0) ::kill(pid, SIGTERM);
  if (reap_until({&ctld_pid_, &slurmd_pid_}, steady::now() + patience)) return;
  for (const pid_t pid : {ctld_pid_, slurmd_pid_})
    if (pid > 0) ::kill(pid, SIGKILL);
  reap_until({&ctld_pid_, &slurmd_pid_}, steady::now() + 2s);
}

// SIGKILLs what is left of the cluster and reaps what is ours to reap, until nothing is left
// or `patience` runs out. Ours: processes in the cluster's sessions that were re-parented to
// this process (slurmstepd, job processes, slurmscriptd once slurmctld is gone); anywhere on
// the machine, a slurm* process whose cwd or command line names the cluster's directory, and
// any process started with this cluster's SLURM_CONF (job processes that left the session).
void slurm_cluster::kill_leftovers(std::chrono::milliseconds patience) noexcept {
  try {
    const pid_t self = ::getpid();
    const std::string root = dir_.string();
    const std::string conf_entry = "SLURM_CONF=" + conf_path();
    const auto deadline = steady::now() + patience;
    std::set<pid_t> killed;  // our children we killed: ours to reap, whatever their session
    for (;;) {
      track_and_reap();  // also picks up the sessions of slurmstepds still alive
      bool left = false;
      for (const auto& p : process_table()) {
        if (p.pid == self) continue;
        const bool in_session = p.ppid == self && sessions_.contains(p.sid);
        if (p.zombie()) {
          if (in_session || (p.ppid == self && killed.contains(p.pid))) {
            ::waitpid(p.pid, nullptr, WNOHANG);
            left = true;
          }
          continue;
        }
        bool ours = in_session;
        if (!ours && p.comm.rfind("slurm", 0) == 0) {
          std::string cmdline = read_file("/proc/" + std::to_string(p.pid) + "/cmdline");
          ours = under(proc_cwd(p.pid), root) || cmdline.find(root) != std::string::npos;
        }
        if (!ours) {
          const std::string environ_text = read_file("/proc/" + std::to_string(p.pid) + "/environ");
          ours = environ_text.find(conf_entry + '\0') != std::string::npos;
        }
        if (ours) {
          ::kill(p.pid, SIGKILL);
          if (p.ppid == self) killed.insert(p.pid);
          left = true;
        }
      }
      if (!left || steady::now() >= deadline) return;
      std::this_thread::sleep_for(10ms);
    }
  } catch (...) {
  }
}

slurm_cluster::~slurm_cluster() {
  bool drained = false;
  try {
    // Cancel, then cancel again what is still there each second: a job submitted while
    // squeue ran is caught by the next round. Every client call is bounded by what is left of
    // the 5 s, and none is made once slurmctld is gone or not listening (clients would retry
    // it for seconds).
    const auto deadline = steady::now() + 5s;
    auto left = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    };
    while (!drained && left() > 0ms && !has_ended(ctld_pid_) && accepts_connections(ctld_port_)) {
      auto ids = split_lines(run_client({"squeue", "-h", "--array", "-o", "%i"}, std::min<std::chrono::milliseconds>(left(), 2s)).out);
      if (!ids.empty()) {
        ids.insert(ids.begin(), "scancel");
        run_client(ids, std::min<std::chrono::milliseconds>(std::max(left(), 100ms), 2s));
      }
      if (left() > 0ms) drained = wait_queue_empty(std::min<std::chrono::milliseconds>(left(), 1s));
    }
  } catch (...) {
  }
  reaper_.request_stop();
  if (reaper_.joinable()) reaper_.join();
  // A job still there (one that ignores SIGTERM takes KillWait) keeps its slurmstepd alive,
  // and slurmd does not exit on SIGTERM while one is: waiting for it would only cost 5 s more.
  stop_daemons(drained ? 5s : 0s);
  kill_leftovers(3s);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace arun::test
