#pragma once
// Which session a command-line argument names (docs/sessions.md, "Naming a session"): its full
// id, `last` (or `-`) for the newest, or a unique prefix or suffix of an id, as git and
// `gh run view` take them. Every command that takes a session id resolves it here.

#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// The directories under the session root `root` that may be sessions (real directories, not
/// symlinks, with a name valid_session_id accepts), newest first: by the UTC second their
/// arun-made ids begin with, then, for ids of the same second, by the `created` time the
/// session's origin.json (else state.json) records to the millisecond, then by id. No file's
/// modification time plays a part. Names not made like arun's ids come last.
std::vector<std::string> session_ids(const std::string& root);

/// Whether `id` is shaped as arun makes session ids: `YYYYMMDD-HHMMSS-xxxxxx` (6 hex digits).
bool arun_made_id(std::string_view id);

/// How a session argument matched.
struct session_match {
  std::string id;                       ///< the one session named; empty when none or several
  std::vector<std::string> candidates;  ///< when several fit: all of them, newest first
};

/// The session `given` names among `ids` (newest first, as session_ids orders them): `last`
/// or `-` is the first arun-made id; an id itself; else the only id that starts or ends with
/// `given`. A `given` that could not be a session's name (valid_session_id: no `/`, no `..`)
/// matches nothing.
session_match match_session(std::string_view given, const std::vector<std::string>& ids);

/// The outcome of find_session: the id, or the message to print after `arun: ` (a usage error).
struct session_lookup {
  std::string id;
  std::string error;
};

/// The session `given` names in `root` (match_session over session_ids(root)). The messages:
/// `no session 'X' in ROOT (arun sessions lists them)` when none fits, and when several do,
/// `'X' matches N sessions in ROOT: ID, ID, ... (give more of the id)` with at most ten.
session_lookup find_session(const std::string& root, std::string_view given);

}  // namespace arun::io
