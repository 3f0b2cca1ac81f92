#include "process/process_table.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace arun::io {
namespace {

struct dir_closer {
  void operator()(DIR* d) const { ::closedir(d); }
};

// State and process group from /proc/PID/stat; false when the process is gone.
bool read_stat(const char* pid, char& state, pid_t& pgrp) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const auto n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and ')', so parse after the last ')'.
  const char* close = std::strrchr(buf, ')');
  if (!close) return false;
  int ppid = 0, group = 0;
  if (std::sscanf(close + 1, " %c %d %d", &state, &ppid, &group) != 3) return false;
  pgrp = group;
  return true;
}

}  // namespace

bool group_has_running_member(pid_t pgid) {
  std::unique_ptr<DIR, dir_closer> proc(::opendir("/proc"));
  if (!proc) return false;
  while (const dirent* e = ::readdir(proc.get())) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char state = 0;
    pid_t pgrp = 0;
    if (read_stat(e->d_name, state, pgrp) && pgrp == pgid && state != 'Z' && state != 'X') return true;
  }
  return false;
}

}  // namespace arun::io
