#include "process/step_containment.hpp"

#include "files/fd_write.hpp"
#include "files/private_files.hpp"
#include "process/process_table.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <unordered_set>
#include <sstream>
#include <thread>
#include <utility>

namespace arun::io {
namespace {

using clock = std::chrono::steady_clock;

// Processes SIGKILLed at the end are normally gone within milliseconds; only one stuck in an
// uninterruptible sleep takes longer, and arun does not wait for it beyond this.
constexpr auto end_wait_limit = std::chrono::seconds(5);

constexpr std::string_view supervised_by = "ARUN_SUPERVISED_BY";

// Empty step cgroups kept for reuse (three descriptors each): enough for any usual concurrency.
constexpr std::size_t max_idle_cgroups = 128;

struct running_step {
  pid_t leader = -1;
  unsigned long long start_ticks = 0;
};

struct containment_registry {
  std::mutex mutex;         // the state below
  std::mutex launch_mutex;  // launch_lock(): launches against sweeps
  containment_request request = containment_request::process_group;
  bool resolved = true;
  containment_state state;
  std::uint64_t next_cgroup = 0;
  bool warned = false;
  std::vector<cgroup_files> idle_cgroups;  // empty step cgroups, for the next steps
  std::unordered_set<step_cgroup*> live_cgroups;
  int subreaper_before = 0;  // PR_GET_CHILD_SUBREAPER before subreaper mode, restored at its end
  std::uint64_t next_step = 0;
  std::map<std::uint64_t, running_step> running;  // subreaper mode: steps by number
};

containment_registry& registry() {
  static containment_registry r;
  return r;
}

bool write_text(int fd, std::string_view text) {
  return ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
}

bool write_file(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write_text(fd, text);
  ::close(fd);
  return ok;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const auto digits = field.substr(i + 1, 3);
      if (digits.size() == 3 && digits.find_first_not_of("01234567") == std::string_view::npos) {
        out.push_back(static_cast<char>(std::stoi(std::string(digits), nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

}  // namespace

std::optional<std::string> current_cgroup_dir(std::string& why) {
  const auto cgroups = read_whole_file("/proc/self/cgroup");
  std::string path;
  if (cgroups) {
    std::istringstream lines(*cgroups);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.empty()) {
    why = "this process is in no cgroup v2 hierarchy";
    return std::nullopt;
  }
  if (path.rfind("/..", 0) == 0) {
    why = "this process's cgroup is outside its cgroup namespace";
    return std::nullopt;
  }
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, device, root, mountpoint;
    fields >> id >> parent >> device >> root >> mountpoint;
    root = unescape_mount_field(root);
    mountpoint = unescape_mount_field(mountpoint);
    if (root != "/" && path.rfind(root, 0) != 0) continue;  // a bind mount of another subtree
    const std::string relative = root == "/" ? path : path.substr(root.size());
    return mountpoint + (relative == "/" ? "" : relative);
  }
  why = "no cgroup2 filesystem is mounted";
  return std::nullopt;
}

namespace {

enum class on_removal { kill, keep_processes };

// Kills everything in the cgroup tree at `dir` (unless told not to), waits up to `patience`
// for it to empty, and removes it (innermost first: a nested arun may have made step cgroups
// of its own). A cgroup that still holds processes stays.
bool remove_cgroup_tree(const std::string& dir, clock::duration patience, on_removal how = on_removal::kill) {
  if (how == on_removal::kill) write_file(dir + "/cgroup.kill", "1");
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> children;
    while (const dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.') children.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& child : children) remove_cgroup_tree(dir + "/" + child, patience, how);
  }
  const auto until = clock::now() + patience;
  while (::rmdir(dir.c_str()) != 0) {
    if (errno == ENOENT) return true;
    if (errno != EBUSY || clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Removes the empty cgroups of arun processes that died without cleaning up (SIGKILL, a crash).
// Processes still in them are left alone: they belong to another run, not to this one.
void remove_stale_cgroups(const std::string& own_dir) {
  DIR* d = ::opendir(own_dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    int pid = 0;
    char rest = 0;
    if (std::sscanf(e->d_name, "arun-%d%c", &pid, &rest) != 1 || pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) stale.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const auto& name : stale) remove_cgroup_tree(own_dir + "/" + name, std::chrono::milliseconds(0), on_removal::keep_processes);
}

// cgroup mode if this process may create and fill cgroups below its own; empty on success.
std::string set_up_cgroup_mode(containment_state& state) {
  std::string why;
  const auto own = current_cgroup_dir(why);
  if (!own) return why;
  // Moving a process needs write access to the common ancestor's cgroup.procs (the
  // delegation rule): the step cgroups' common ancestor with arun's is arun's own.
  if (::access((*own + "/cgroup.procs").c_str(), W_OK) != 0)
    return "cannot move processes in " + *own + " (" + errno_text(errno) + ")";
  remove_stale_cgroups(*own);
  const std::string base = *own + "/arun-" + std::to_string(::getpid());
  if (::mkdir(base.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot create a cgroup in " + *own + " (" + errno_text(errno) + ")";
  if (::access((base + "/cgroup.kill").c_str(), W_OK) != 0) {
    ::rmdir(base.c_str());
    return "the kernel has no cgroup.kill (Linux 5.14 or later is needed)";
  }
  state.cgroup_dir = base;
  return {};
}

void set_up_subreaper_mode(containment_registry& r) {
  ::prctl(PR_GET_CHILD_SUBREAPER, &r.subreaper_before);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  r.state.mode = containment_mode::subreaper;
}

// Resolves the request on first use (so that commands which start nothing create nothing).
containment_state& resolved_state(containment_registry& r) {
  if (r.resolved) return r.state;
  r.resolved = true;
  r.state = {};
  switch (r.request) {
    case containment_request::process_group:
      break;
    case containment_request::subreaper:
      set_up_subreaper_mode(r);
      break;
    case containment_request::automatic:
    case containment_request::cgroup: {
      auto why = set_up_cgroup_mode(r.state);
      if (why.empty()) {
        r.state.mode = containment_mode::cgroup;
      } else {
        if (r.request == containment_request::cgroup)
          std::fprintf(stderr, "arun: warning: no cgroup containment: %s; using the subreaper mode\n", why.c_str());
        r.state.fallback_reason = std::move(why);
        set_up_subreaper_mode(r);
      }
      break;
    }
  }
  return r.state;
}

std::vector<pid_t> own_children() {
  std::vector<pid_t> pids;
  // Orphans re-parent to any thread of the subreaper: read every thread's list.
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return pids;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    for (pid_t pid; in >> pid;) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

// The value of ARUN_SUPERVISED_BY the process started with; empty when unreadable or unset.
std::string supervised_by_value(pid_t pid) {
  const auto environ = read_whole_file("/proc/" + std::to_string(pid) + "/environ");
  if (!environ) return {};
  std::string_view rest = *environ;
  while (!rest.empty()) {
    const auto end = rest.find('\0');
    const auto entry = rest.substr(0, end);
    if (entry.size() > supervised_by.size() && entry.compare(0, supervised_by.size(), supervised_by) == 0 &&
        entry[supervised_by.size()] == '=')
      return std::string(entry.substr(supervised_by.size() + 1));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return {};
}

// Whether an escaped child may still belong to a running step. Its step is known from the
// variable; a process that cleared its environment is kept while a step that was already
// running when it started is still running (a tick's tie counts as "maybe").
bool may_belong_to_running_step(const containment_registry& r, const process_entry& e, bool ending) {
  if (ending) return false;
  const std::string prefix = std::to_string(::getpid()) + ".";
  const auto owner = supervised_by_value(e.pid);
  if (owner.rfind(prefix, 0) == 0) {
    try {
      return r.running.contains(std::stoull(owner.substr(prefix.size())));
    } catch (const std::exception&) {
    }
  }
  for (const auto& [number, step] : r.running)
    if (step.start_ticks <= e.start_ticks) return true;
  return false;
}

std::size_t sweep(containment_registry& r, bool ending) {
  std::lock_guard launch(r.launch_mutex);
  std::lock_guard lock(r.mutex);
  std::size_t killed = 0;
  for (const pid_t pid : own_children()) {
    bool leader = false;
    for (const auto& [number, step] : r.running) leader = leader || step.leader == pid;
    if (leader) continue;
    const auto e = read_process(pid);
    if (!e) continue;
    if (!e->running()) {
      ::waitpid(pid, nullptr, WNOHANG);
      continue;
    }
    if (may_belong_to_running_step(r, *e, ending)) continue;
    ::kill(pid, SIGKILL);
    if (e->pgrp == pid) ::kill(-pid, SIGKILL);  // it leads a group of its own: all of it
    ++killed;
  }
  return killed;
}

void end_locked(containment_registry& r) {
  if (!r.resolved) return;
  if (r.state.mode == containment_mode::subreaper) {
    r.mutex.unlock();
    const auto until = clock::now() + end_wait_limit;
    auto delay = std::chrono::milliseconds(1);
    while (sweep(r, true) > 0 && clock::now() < until) {
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, std::chrono::milliseconds(50));
    }
    sweep(r, true);  // reap the last ones
    r.mutex.lock();
    ::prctl(PR_SET_CHILD_SUBREAPER, r.subreaper_before);
  }
  for (auto& idle : r.idle_cgroups) idle.close();
  r.idle_cgroups.clear();
  if (!r.state.cgroup_dir.empty()) remove_cgroup_tree(r.state.cgroup_dir, end_wait_limit);
  r.state = {};
}

}  // namespace

std::string_view containment_mode_name(containment_mode mode) {
  switch (mode) {
    case containment_mode::cgroup: return "cgroup";
    case containment_mode::subreaper: return "subreaper";
    case containment_mode::process_group: break;
  }
  return "group";
}

std::optional<containment_request> parse_containment_request(std::string_view text) {
  if (text == "auto") return containment_request::automatic;
  if (text == "cgroup") return containment_request::cgroup;
  if (text == "subreaper") return containment_request::subreaper;
  if (text == "group") return containment_request::process_group;
  return std::nullopt;
}

void enable_step_containment(containment_request request) {
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  end_locked(r);
  r.request = request;
  r.resolved = false;
}

containment_state step_containment() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return resolved_state(r);
}

void end_step_containment() noexcept {
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  end_locked(r);
  r.request = containment_request::process_group;
}

void cgroup_files::close() noexcept {
  for (int* fd : {&dir_fd, &kill_fd, &events_fd})
    if (*fd >= 0) ::close(std::exchange(*fd, -1));
}

step_cgroup::step_cgroup(cgroup_files files) : files_(std::move(files)) {}

step_cgroup::~step_cgroup() {
  auto& r = registry();
  {
    std::lock_guard lock(r.mutex);
    r.live_cgroups.erase(this);
    if (!killed_ && !populated() && r.state.mode == containment_mode::cgroup &&
        r.idle_cgroups.size() < max_idle_cgroups && files_.dir.rfind(r.state.cgroup_dir + "/", 0) == 0) {
      r.idle_cgroups.push_back(std::exchange(files_, {}));
      return;
    }
  }
  kill();
  files_.close();
  // Normally empty by now (the supervisor waited); if not, end_step_containment removes it.
  remove_cgroup_tree(files_.dir, std::chrono::milliseconds(0));
}

void step_cgroup::kill() noexcept {
  killed_ = true;
  write_text(files_.kill_fd, "1");
}

void kill_all_step_cgroups() noexcept {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto* cgroup : r.live_cgroups) cgroup->kill();
}

bool step_cgroup::populated() const noexcept {
  char buf[256];
  const auto n = ::pread(files_.events_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  return std::strstr(buf, "populated 1") != nullptr;
}

std::unique_ptr<step_cgroup> make_step_cgroup() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  const auto& state = resolved_state(r);
  if (state.mode != containment_mode::cgroup) return nullptr;
  // Registered while the lock is held, so that kill_all_step_cgroups sees it.
  const auto live = [&r](cgroup_files files) {
    auto cgroup = std::make_unique<step_cgroup>(std::move(files));
    r.live_cgroups.insert(cgroup.get());
    return cgroup;
  };
  if (!r.idle_cgroups.empty()) {
    auto files = std::move(r.idle_cgroups.back());
    r.idle_cgroups.pop_back();
    return live(std::move(files));
  }
  cgroup_files files;
  files.dir = state.cgroup_dir + "/s" + std::to_string(++r.next_cgroup);
  int err = 0;
  if (::mkdir(files.dir.c_str(), 0755) == 0) {
    files.dir_fd = ::open(files.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    files.kill_fd = ::open((files.dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    files.events_fd = ::open((files.dir + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    if (files.dir_fd >= 0 && files.kill_fd >= 0 && files.events_fd >= 0) return live(std::move(files));
    err = errno;
    files.close();
    ::rmdir(files.dir.c_str());
  } else {
    err = errno;
  }
  if (!r.warned) {
    r.warned = true;
    std::fprintf(stderr, "arun: warning: cannot create the cgroup %s (%s); such steps run in their process group only\n",
                 files.dir.c_str(), errno_text(err).c_str());
  }
  return nullptr;
}

subreaper_step::subreaper_step() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  number_ = ++r.next_step;
  env_entry_ = std::string(supervised_by) + "=" + std::to_string(::getpid()) + "." + std::to_string(number_);
}

subreaper_step::~subreaper_step() { finish(); }

void subreaper_step::started(pid_t leader) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  if (leader <= 0) return;
  running_step step{leader, 0};
  if (const auto e = read_process(leader)) step.start_ticks = e->start_ticks;
  r.running[number_] = step;
  running_ = true;
}

void subreaper_step::finish() {
  if (!running_) return;
  running_ = false;
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.running.erase(number_);
}

std::unique_lock<std::mutex> launch_lock() { return std::unique_lock(registry().launch_mutex); }

std::size_t sweep_escaped_processes() {
  auto& r = registry();
  {
    std::lock_guard lock(r.mutex);
    if (resolved_state(r).mode != containment_mode::subreaper) return 0;
  }
  return sweep(r, false);
}

}  // namespace arun::io
