#pragma once
/// The content-keyed cache of step outputs (a step's `cache:`): the engine derives a key from
/// what decides a leaf's result and asks the host for an output stored under it; a hit is
/// reused without starting a child. The engine reads no files: io keeps the entries (a
/// directory under $XDG_CACHE_HOME/arun), hashes, and reads the files a key covers.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

/// A finished instance's output as the cache keeps it.
struct cached_output {
  std::string stdout_text;  ///< the child's stdout, as captured (the step's output is derived from it again)
  std::chrono::nanoseconds duration{};  ///< how long the run that stored it took
  std::string recipe;                   ///< the recipe that stored it (for `arun cache list`)
  std::string instance;                 ///< the instance that stored it
  std::string session;                  ///< the session that stored it
  std::chrono::system_clock::time_point created{};
};

class result_cache {
public:
  virtual ~result_cache() = default;

  /// A strong hash (hex) of `material`: a key, or a part of one.
  virtual std::string hash(std::string_view material) const = 0;

  /// What the contents of the regular files matching `globs` (relative to `dir`, an absolute
  /// path; `**` spans directories) contribute to a key: every matching path with a hash of
  /// its bytes, in path order. A glob matching nothing counts as such and adds a warning; a
  /// file that cannot be read is an error (set `error`, return empty).
  virtual std::string digest_files(const std::vector<std::string>& globs, const std::string& dir,
                                   std::vector<std::string>& warnings, std::string& error) const = 0;

  /// The output stored under `key`, if any was stored less than `max_age` ago (none: any
  /// age). A damaged or torn entry is no entry. Never throws.
  virtual std::optional<cached_output> find(const std::string& key,
                                            std::optional<std::chrono::seconds> max_age) noexcept = 0;

  /// Keeps `output` under `key`, replacing an older entry; whole or not at all, also when
  /// several arun processes store the same key at once. Never throws: a failure is a
  /// warning (the returned text), never a failure of the step.
  virtual std::string store(const std::string& key, const cached_output& output) noexcept = 0;
};

}  // namespace arun
