#pragma once
// Where the files arun ships beside its binary are: the fake agent, the JSON Schemas and the
// example recipes. The same binary works from an install (PREFIX/bin/arun reads
// PREFIX/share/arun), from a build tree of a checkout (build/release/src/cli/arun reads the
// checkout's tools/, schema/ and recipes/) and from a copy with fake-agent next to it.

#include <string>
#include <vector>

namespace arun::io {

struct shipped_file {
  std::string path;                    ///< empty when not found
  std::vector<std::string> looked_in;  ///< every place tried, in order, for the error message
};

/// The running binary's path (/proc/self/exe), or empty when it cannot be read.
std::string running_binary();

/// The fake agent: $ARUN_FAKE_AGENT when set (even if it is not executable: the error then
/// names it); else `fake-agent` next to `exe`, in `exe`'s ../share/arun, or in tools/ of the
/// checkout whose build tree holds `exe`.
shipped_file locate_fake_agent(const std::string& exe);

/// The recipe JSON Schema: ../share/arun/schema/recipe.schema.json or the checkout's
/// schema/recipe.schema.json.
shipped_file locate_recipe_schema(const std::string& exe);

/// The example recipe folders (tutorials, patterns) of the install or checkout holding `exe`;
/// discovery searches them last, so `arun list` shows them and `arun 01-hello` runs one.
std::vector<std::string> shipped_recipe_dirs(const std::string& exe);

}  // namespace arun::io
