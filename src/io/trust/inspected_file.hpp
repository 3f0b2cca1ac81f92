#pragma once
// A file arun reads from a directory it did not choose — a project's `./.arun.yaml` — is read
// once, hashed, and checked like git's `safe.directory` and ssh's StrictModes before its
// content may be trusted (docs/security.md, "A project's .arun.yaml").

#include <sys/stat.h>

#include <cstddef>
#include <string>

namespace arun::io {

/// What `inspect_file` found.
struct inspected_file {
  bool present = false;    ///< something has the name (even a dangling link)
  bool symlink = false;    ///< the name is a symbolic link (to real_path)
  std::string real_path;   ///< the name with every symlink resolved
  std::string content;     ///< the bytes read: what is parsed and what is hashed
  std::string sha256;      ///< hex SHA-256 of content
  std::string refusal;     ///< why the content can never be trusted by its hash alone; empty if it can
  std::string error;       ///< why it could not be read (not a regular file, too large, I/O); empty if read
};

/// Reads `path` without hanging or being redirected while reading: the name is resolved to its
/// real path first, which is then opened O_NOFOLLOW|O_NONBLOCK and must be a regular file of at
/// most `max_bytes`. The file, its directory and the directory of the name given must be owned
/// by the user (or root) and writable by no one else; otherwise `refusal` names the path, the
/// owner and the mode.
inspected_file inspect_file(const std::string& path, std::size_t max_bytes);

/// Why `what` (with status `st`) could have been written by someone other than the user or
/// root: "PATH is owned by uid 4242 (you are uid 0), mode 0644" or "PATH is writable by group
/// (owner root, mode 0664)"; empty when it could not.
std::string ownership_problem(const std::string& what, const struct stat& st);

}  // namespace arun::io
