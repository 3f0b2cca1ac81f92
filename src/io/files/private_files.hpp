#pragma once
// Files that hold step output — sessions, audit and event files — may hold secrets a step
// printed: they are the owner's only (files 0600, directories 0700).

#include <string>
#include <string_view>
#include <system_error>

namespace arun::io {

/// Creates `path` and its missing parents, each one made mode 0700; false with `ec` set when
/// it cannot. Directories that already exist keep their mode.
bool make_private_directories(const std::string& path, std::error_code& ec);

/// `text` made safe as part of a file name: bytes outside [A-Za-z0-9_.-] become `_`, and so
/// does a leading `.`, so the name always lands directly in its directory, visible.
std::string file_name_part(std::string_view text);

}  // namespace arun::io
