#pragma once
// Reading a stored output back (session_outputs.hpp; docs/security.md, "Outputs are data,
// never references"): only a file of the session's own outputs/ directory, named (never a
// path), a regular file of exactly the recorded size — not a symlink, a FIFO, a device or a
// file that grew or shrank.

#include <cstdint>
#include <optional>
#include <string>

namespace arun::io {

/// Whether `name` can name a file in a directory: not empty, no `/`, no NUL, not `.` or `..`.
bool plain_file_name(const std::string& name) noexcept;

/// The `bytes` bytes of `dir`/`name`: `dir` opened without following a symlink, a directory
/// of this user that only it can write; `name` opened relative to it (openat, O_NOFOLLOW,
/// O_NONBLOCK: a FIFO never blocks), a regular file whose size is `bytes`, read exactly that
/// far. Otherwise none, with the reason in `why`.
std::optional<std::string> read_stored_file(const std::string& dir, const std::string& name, std::uint64_t bytes,
                                            std::string& why);

}  // namespace arun::io
