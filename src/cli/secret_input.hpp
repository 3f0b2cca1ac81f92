#pragma once
// Secret values that never pass through arun's command line (docs/cli.md, --secret and
// --secret-file): a value in argv is readable by every user through ps and /proc.

#include <optional>
#include <string>
#include <string_view>

namespace arun::cli {

/// The value of `--secret NAME`: typed at the terminal with echo off (the prompt, naming NAME,
/// on stderr) when stdin is one, else one line of stdin (its newline and a CR before it
/// removed). None and `error` when stdin is closed or ends before a value.
std::optional<std::string> read_secret_from_stdin(std::string_view name, std::string& error);

/// The contents of a `--secret-file` PATH with one trailing newline (LF or CRLF) removed. None
/// and `error` when it cannot be read, is not a regular file or is empty; `warning` when group
/// or others may read or write it.
std::optional<std::string> read_secret_file(const std::string& path, std::string& error, std::string& warning);

}  // namespace arun::cli
