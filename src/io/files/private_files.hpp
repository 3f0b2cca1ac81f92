#pragma once
// Files that hold step output — sessions, audit and event files — may hold secrets a step
// printed: they are the owner's only (files 0600, directories 0700).

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace arun::io {

/// Creates `path` and its missing parents, each one made mode 0700; false with `ec` set when
/// it cannot. Directories that already exist keep their mode.
bool make_private_directories(const std::string& path, std::error_code& ec);

/// Writes `text` to `path` (created with `mode`, truncated), never through a symlink (ELOOP);
/// false with errno set when it cannot.
bool write_private_file(const std::string& path, std::string_view text, mode_t mode = 0600);

/// Replaces `path` with `text` atomically (a temp file beside it, then a rename): a reader
/// sees the old text or the new, never half of it. false with errno set when it cannot.
bool replace_private_file(const std::string& path, std::string_view text);

/// The whole content of `path`; nullopt when it cannot be read.
std::optional<std::string> read_whole_file(const std::string& path);

/// `text` made safe as part of a file name: bytes outside [A-Za-z0-9_.-] become `_`, and so
/// does a leading `.`, so the name always lands directly in its directory, visible.
std::string file_name_part(std::string_view text);

}  // namespace arun::io
