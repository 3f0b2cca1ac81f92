#pragma once
// Reading the kernel's process table (/proc) for supervision and leak checks.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace arun::io {

struct process_entry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  char state = '?';  ///< 'R', 'S', 'D', 'Z' (zombie), ...
  unsigned long long start_ticks = 0;  ///< start time, clock ticks after boot
  std::string comm;

  bool running() const noexcept { return state != 'Z' && state != 'X'; }
};

/// Every process visible in /proc (processes that vanish while reading are skipped).
std::vector<process_entry> read_process_table();

/// One process, if it exists.
std::optional<process_entry> read_process(pid_t pid);

/// Whether any process of group `pgid` is still running (zombies do not count: they hold
/// no resources and only wait to be reaped).
bool group_has_running_member(pid_t pgid);

/// Running processes descended from `ancestor` (orphans count only when `ancestor` is
/// their subreaper).
std::vector<process_entry> running_descendants(pid_t ancestor);

/// Number of file descriptors this process has open (for leak checks).
int open_fd_count();

}  // namespace arun::io
