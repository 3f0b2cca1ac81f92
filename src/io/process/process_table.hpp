#pragma once
// Reading the kernel's process table (/proc) for supervision checks.

#include <sys/types.h>

namespace arun::io {

/// Whether any process of group `pgid` is still running (zombies do not count: they hold
/// no resources and only wait to be reaped).
bool group_has_running_member(pid_t pgid);

}  // namespace arun::io
