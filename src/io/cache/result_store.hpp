#pragma once
// The on-disk side of a step's `cache:` (arun/result_cache.hpp): outputs kept under content
// keys in a directory that any number of arun processes share at once, so every write is a
// whole file renamed into place and every read checks what it reads. `arun cache list|clear`
// and the size cap (--cache-max-size) go through the same class.

#include "files/directory_trust.hpp"

#include <arun/result_cache.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// `$ARUN_CACHE_DIR`, else `$XDG_CACHE_HOME/arun`, else `$HOME/.cache/arun` (empty variables
/// count as unset; without HOME, the password database's home). Empty when none is known.
std::string default_cache_dir();

/// The cache directory of `flag` (--cache-dir; empty: default_cache_dir()), checked like a
/// directory shared with other users (trust_directory, docs/caching.md): the user's own
/// subdirectory of a shared sticky one, or the refusal. Nothing is made.
trusted_directory checked_cache_dir(const std::string& flag);

/// The cache below `dir`: `dir/results/KK/KEY.json`, one JSON object per entry (KK: the key's
/// first two hex digits). Directories are made 0700 on the first store, entries are 0600: an
/// output holds whatever the step printed. An entry file's mtime is when it was last used
/// (stored or found), which the size cap evicts by.
class result_store final : public arun::result_cache {
public:
  /// `max_bytes`: the size trim() brings the cache under; 0: no cap.
  result_store(std::string dir, std::uint64_t max_bytes);

  /// The lowercase hex SHA-256 of `material`.
  std::string hash(std::string_view material) const override;

  /// For each glob, in the order given: the line `glob TEXT`, then `PATH SHA256` for every
  /// regular file it matches (symlinks to files count), sorted by PATH (relative to `dir`;
  /// absolute for an absolute glob). `*`, `?` and `[...]` match within one path component
  /// (fnmatch(3)) and never a leading `.` (hidden files need a pattern that starts with `.`);
  /// `**` as a whole component matches zero or more directories, neither hidden ones nor
  /// symlinks to directories (no cycles); a trailing `**` matches every file below. A glob
  /// matching nothing adds `glob TEXT: no match` and the warning "cache.files 'TEXT' matches
  /// no file in DIR". A file or directory that cannot be read sets `error` and returns "".
  std::string digest_files(const std::vector<std::string>& globs, const std::string& dir,
                           std::vector<std::string>& warnings, std::string& error) const override;

  /// The entry under `key` when it is whole (its format, key and output SHA-256 check out)
  /// and, with `max_age`, was created less than that long ago; a hit marks the file used now.
  /// A key that is not 16 to 128 lowercase hex digits, a damaged entry or a file another user
  /// owns is a miss (never removed here: another process may just have renamed a good one
  /// into place).
  std::optional<cached_output> find(const std::string& key,
                                    std::optional<std::chrono::seconds> max_age) noexcept override;

  /// Writes the entry to a temp file beside its final name and renames it there: readers and
  /// concurrent writers of the same key see one whole entry (the last one renamed). `created`
  /// is the output's, or now when unset. "" on success, else a warning ("cannot store the
  /// cached output of INSTANCE in DIR: why"); the temp file is removed on every failure.
  std::string store(const std::string& key, const cached_output& output) noexcept override;

  /// One entry file, as `arun cache list` shows it.
  struct entry_info {
    std::string key, path, recipe, instance, session;
    std::uint64_t bytes = 0;  ///< the file's size
    std::chrono::system_clock::time_point created{}, last_used{};  ///< a damaged entry's created is its mtime
    std::chrono::nanoseconds duration{};
    bool damaged = false;  ///< unreadable, cut, edited or of another format: never reused
  };
  /// Every entry file of the user's, damaged ones flagged, most recently used first; shards
  /// that are symlinks are not entered. Entries removed while
  /// listing (another process's trim) are left out; a missing cache is an empty list. `error`
  /// is set only when the cache directory itself cannot be read.
  std::vector<entry_info> list(std::string& error) const;

  struct removal {
    std::size_t entries = 0;
    std::uint64_t bytes = 0;
    /// What was left alone, one warning each: a shard that is a symlink or not the user's
    /// directory (nothing is removed through it).
    std::vector<std::string> refused;
  };
  /// Removes the entries `doomed` picks (from list()); what was removed. `error` names the
  /// first file that could not be removed (the others are still tried).
  removal remove_if(const std::function<bool(const entry_info&)>& doomed, std::string& error);

  /// Over max_bytes, removes the least recently used entries until the cache is at 90% of it;
  /// also removes temp files older than an hour (left by writers that crashed). Reads only
  /// file sizes and times. A missing cache is no error.
  removal trim(std::string& error);

  /// Outputs longer than `bytes` (the run's --max-output) are no hits; 0: no bound.
  void limit_output(std::uint64_t bytes) noexcept { output_limit_ = bytes; }

  /// Entries find() ignored because another user owns the file (only the user's own are
  /// trusted, docs/caching.md): the CLI says so once.
  std::uint64_t foreign_entries() const noexcept { return foreign_entries_.load(); }

  /// The bytes of the entries this object stored (a run that stored nothing needs no trim).
  std::uint64_t stored_bytes() const noexcept { return stored_bytes_.load(); }

  const std::string& dir() const noexcept { return dir_; }
  /// Where the entry of `key` lives (whether or not it exists); `key` must be valid_key.
  std::string entry_path(const std::string& key) const;
  /// 16 to 128 lowercase hex digits: what hash() makes, and nothing that leaves the directory.
  static bool valid_key(std::string_view key) noexcept;

private:
  std::string dir_;
  std::uint64_t max_bytes_;
  std::atomic<std::uint64_t> stored_bytes_{0};
  std::atomic<std::uint64_t> foreign_entries_{0};
  std::uint64_t output_limit_ = 0;
};

}  // namespace arun::io
