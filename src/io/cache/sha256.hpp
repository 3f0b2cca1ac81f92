#pragma once
// Cache keys and the integrity check of cache entries need a strong hash of arbitrary bytes,
// often fed piece by piece (a file read in blocks). Debian's nettle (nettle-dev) provides
// SHA-256; this wraps it so no nettle header reaches the rest of arun.

#include <memory>
#include <string>
#include <string_view>

namespace arun::io {

/// An incremental SHA-256: update() any number of times, then hex_digest().
class sha256 {
public:
  sha256();  ///< throws std::bad_alloc
  ~sha256();
  sha256(const sha256&) = delete;
  sha256& operator=(const sha256&) = delete;

  void update(std::string_view bytes) noexcept;
  /// The 64 lowercase hex digits of what was fed so far; the hash starts over afterwards.
  std::string hex_digest();

private:
  struct state;
  std::unique_ptr<state> state_;
};

/// The lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace arun::io
