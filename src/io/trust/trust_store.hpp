#pragma once
// The project files the user trusted, like direnv's `allow`: each file's real path and the
// SHA-256 of the content the user reviewed, kept in the user's own config directory
// (`$XDG_CONFIG_HOME/arun/trusted.json`, else `~/.config/arun/trusted.json`), mode 0600.
// An edited file has another hash and is untrusted again (docs/security.md).

#include "trust/inspected_file.hpp"

#include <map>
#include <string>

namespace arun::io {

/// arun's directory in the user's config: `$XDG_CONFIG_HOME/arun`, else `~/.config/arun`;
/// empty when neither variable is set.
std::string user_config_dir();

struct trusted_file {
  std::string sha256;
  std::string trusted_at;  ///< UTC, ISO 8601
};

struct trust_store {
  std::string path;                            ///< the store's file
  std::map<std::string, trusted_file> files;   ///< by real path
  std::string error;  ///< why the store could not be used (then nothing is trusted); empty if fine
};

/// The store at `path` (default: user_config_dir()/trusted.json). A missing store is empty;
/// one that cannot be read or parsed, or that someone other than the user could have written
/// (owner, mode, its directory), has `error` set and trusts nothing.
trust_store read_trust_store(std::string path = {});

/// Writes the store atomically (temp file and rename, 0600; its directory made 0700 if
/// missing); false with `error` set when it cannot.
bool write_trust_store(const trust_store& store, std::string& error);

enum class trust_state { trusted, never_trusted, changed, refused, unknown };

struct trust_verdict {
  trust_state state = trust_state::never_trusted;
  std::string reason;  ///< a phrase after the file's name: "is not trusted", "changed since it was trusted", ...
};

/// Whether the inspected file is trusted: its owner and mode allow it, and its real path is in
/// the store with the hash of the content that was read.
trust_verdict judge_trust(const inspected_file& file, const trust_store& store);

/// The current time as the store records it.
std::string trust_timestamp();

}  // namespace arun::io
