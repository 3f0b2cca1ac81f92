#pragma once
// A private temporary file (mode 0600) removed when the object goes away.

#include <string>
#include <string_view>

namespace arun::io {

class private_temp_file {
public:
  /// Creates the file in `dir` (empty: $TMPDIR, else /tmp) and writes `content` to it.
  /// With `keep_open`, the descriptor stays open, rewound to the start: a child's stdin
  /// without opening the file again. Throws std::system_error when the file cannot be
  /// created or written.
  private_temp_file(std::string_view prefix, std::string_view content, const std::string& dir = {},
                    bool keep_open = false);
  ~private_temp_file();
  private_temp_file(const private_temp_file&) = delete;
  private_temp_file& operator=(const private_temp_file&) = delete;

  const std::string& path() const noexcept { return path_; }
  /// The open descriptor (close-on-exec, read from the start) with `keep_open`; else -1.
  int fd() const noexcept { return fd_; }

private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace arun::io
