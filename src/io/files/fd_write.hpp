#pragma once
// Writing a whole buffer to a file descriptor: the journal, the snapshots and the event files
// each need "one write(2) in practice, retried on EINTR and short writes".

#include <string_view>

namespace arun::io {

/// write(2) until all of `data` is written; 0, or the errno value of the failure (EIO when
/// the kernel took nothing).
int write_all(int fd, std::string_view data) noexcept;

}  // namespace arun::io
