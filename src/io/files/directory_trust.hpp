#pragma once
// Directories arun keeps its user's files in — sessions, the cache, the Slurm job files — may
// sit below directories other users share (a 1777 scratch, a group's project tree). They are
// checked the way ssh's StrictModes checks ~/.ssh (docs/security.md, "Directories shared with
// other users"): a component another user owns or can write could be swapped under arun, so
// it is refused, by a message naming the path, its owner and mode, and the fix.

#include <sys/types.h>

#include <string>
#include <string_view>

namespace arun::io {

/// What a check found: the directory to use, or why none can be.
struct trusted_directory {
  std::string path;   ///< the directory to use (a per-user subdirectory of a shared one)
  std::string error;  ///< set: refused; names the path, its owner and mode, and the fix
  bool ok() const noexcept { return error.empty(); }
};

enum class trust_mode {
  make,  ///< missing components are made, each 0700
  look,  ///< missing components are fine (nothing there yet): nothing is made
};

/// Checks `path` (made absolute) for a directory `uid` keeps private files in, component by
/// component from `/`:
/// - an existing component must be owned by `uid` or root, and writable by nobody else, except
///   a sticky directory (like /tmp) owned by root or `uid` (others cannot rename or remove
///   what is not theirs in it) and group write on `uid`'s private group (a group named as the
///   user, of no other member);
/// - a symlink must be owned by `uid` or root (its directory is checked, so no one else can
///   replace it); its target is checked the same way, at most 40 links;
/// - the directory itself must be owned by `uid` and writable by no one else; when it is a
///   shared sticky directory (writable by others, like /tmp), its per-user subdirectory
///   `path/USER` (per_user_name) is used instead.
/// With `make`, missing components are made 0700 (made by arun: each is checked again after
/// mkdir, so one another user made first is refused, not taken). `what` names the setting in
/// messages ("--session-dir"). Never throws.
trusted_directory trust_directory(const std::string& path, std::string_view what, trust_mode mode, uid_t uid);
/// The same, for the effective user.
trusted_directory trust_directory(const std::string& path, std::string_view what, trust_mode mode);

/// `path` as trust_directory would use it (its per-user subdirectory when `path` is a shared
/// sticky directory), without checking or making anything: where to look.
std::string per_user_path(const std::string& path, uid_t uid);

/// The name of `uid`'s subdirectory in a shared directory: the user name, else the number.
std::string per_user_name(uid_t uid);

/// `uid` as messages show it: `NAME (uid N)`, or `uid N` when it has no name.
std::string describe_owner(uid_t uid);

/// A file's permission bits as messages show them: `0755`.
std::string mode_text(mode_t mode);

/// Makes `path` (its parent trusted) anew, 0700, and checks it is `uid`'s directory; an error
/// text (EEXIST included: a directory made exclusively is never one found there) or "".
std::string make_directory_exclusively(const std::string& path, uid_t uid);

}  // namespace arun::io
