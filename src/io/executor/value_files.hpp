#pragma once
// The private temp files that carry values too large for the environment (shell_exports),
// shared by the steps of a run: a value written for one step is not written again for the
// next step that passes the same value (a foreach of 1,000 items that each read one 1 MiB
// value writes it once, not 1,000 times).

#include "files/temp_file.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace arun::io {

class value_files {
public:
  /// Files no step uses any more are kept while their values together stay under
  /// `keep_bytes`; past it the least recently used go first.
  explicit value_files(std::size_t keep_bytes = 16u << 20) : keep_bytes_(keep_bytes) {}

  /// Where new files go (empty: $TMPDIR): a directory every node sees when steps run on a cluster.
  void set_directory(std::string dir) { directory_ = std::move(dir); }

  /// A file (mode 0600) holding exactly `value`: the one already written for an equal value,
  /// else a new one named `<prefix>XXXXXX`. Throws std::system_error when it cannot be
  /// written. The file stays while the returned handle (or a copy) lives.
  std::shared_ptr<const private_temp_file> file_for(std::string_view value, std::string_view prefix);

  std::size_t files() const;  ///< files kept now (for tests)

private:
  struct entry {
    std::string value;  // compared in full: a hash alone could hand a step the wrong value
    std::shared_ptr<const private_temp_file> file;
    std::uint64_t last_use = 0;
    // The file as written: a step may remove or rewrite it (it can see the path), and the
    // next step must not read what is left.
    std::uint64_t inode = 0, size = 0;
    std::int64_t mtime_ns = 0;
  };
  static bool unchanged(const entry& e);
  static void remember(entry& e);
  void trim();  // holds mutex_

  const std::size_t keep_bytes_;
  std::string directory_;  ///< empty: $TMPDIR
  mutable std::mutex mutex_;
  std::unordered_multimap<std::size_t, entry> by_hash_;
  std::uint64_t clock_ = 0;
};

}  // namespace arun::io
