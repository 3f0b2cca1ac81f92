#include "process/process_table.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>

namespace arun::io {
namespace {

struct dir_closer {
  void operator()(DIR* d) const { ::closedir(d); }
};

// Parses /proc/PID/stat; false when the process is gone.
bool read_stat(const char* pid, process_entry& e) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const auto n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and ')', so parse after the last ')'.
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  if (!open || !close || close < open) return false;
  int pid_value = 0, ppid = 0, pgrp = 0;
  if (std::sscanf(buf, "%d", &pid_value) != 1) return false;
  // Fields 3-5, then 6-21 skipped, then 22: starttime.
  if (std::sscanf(close + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &e.state, &ppid, &pgrp, &e.start_ticks) < 3)
    return false;
  e.pid = pid_value;
  e.ppid = ppid;
  e.pgrp = pgrp;
  e.comm.assign(open + 1, close);
  return true;
}

}  // namespace

std::optional<process_entry> read_process(pid_t pid) {
  process_entry e;
  if (!read_stat(std::to_string(pid).c_str(), e)) return std::nullopt;
  return e;
}

std::vector<process_entry> read_process_table() {
  std::vector<process_entry> table;
  std::unique_ptr<DIR, dir_closer> proc(::opendir("/proc"));
  if (!proc) return table;
  while (const dirent* d = ::readdir(proc.get())) {
    if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
    process_entry e;
    if (read_stat(d->d_name, e)) table.push_back(std::move(e));
  }
  return table;
}

bool group_has_running_member(pid_t pgid) {
  for (const auto& e : read_process_table())
    if (e.pgrp == pgid && e.running()) return true;
  return false;
}

std::vector<process_entry> running_descendants(pid_t ancestor) {
  const auto table = read_process_table();
  std::unordered_map<pid_t, pid_t> parent;
  for (const auto& e : table) parent[e.pid] = e.ppid;
  std::vector<process_entry> found;
  for (const auto& e : table) {
    if (!e.running()) continue;
    // The hop limit guards against a cycle that pid reuse during the scan could fake.
    int hops = 0;
    for (pid_t up = e.ppid; up > 1 && hops < 4096; up = parent.contains(up) ? parent[up] : 0, ++hops) {
      if (up == ancestor) {
        found.push_back(e);
        break;
      }
    }
  }
  return found;
}

int open_fd_count() {
  std::unique_ptr<DIR, dir_closer> fds(::opendir("/proc/self/fd"));
  if (!fds) return -1;
  int n = 0;
  while (const dirent* d = ::readdir(fds.get()))
    if (d->d_name[0] != '.') ++n;
  return n - 1;  // the directory stream's own descriptor
}

}  // namespace arun::io
