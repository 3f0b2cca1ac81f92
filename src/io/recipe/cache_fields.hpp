#pragma once
// A step's `cache:` and `isolation:` (bash and agent steps), read when the recipe loads, with
// a position for every mistake: a max_age that cannot be read fails `validate`, not the first
// lookup.

#include "recipe/yaml_fields.hpp"

#include <arun/recipe.hpp>

namespace arun::io {

/// `cache: true`, `cache: false` (none), or `cache: {key, max_age, scope, files}`.
void read_cache(const field_reader& f, step& s);

/// `isolation: worktree | copy`; with `cache` it is an error (a reused output brings back no
/// tree and no branch).
void read_isolation(const field_reader& f, step& s);

}  // namespace arun::io
