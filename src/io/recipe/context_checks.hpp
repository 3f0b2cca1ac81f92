#pragma once
// The `context_validation` pre-flight (docs/reference/recipe.md, "context_validation"): checked
// before a run starts, against the context with --set applied.

#include <arun/recipe.hpp>

#include <string>
#include <vector>

namespace arun::io {

/// One message per failed check (`nonempty`, `path` exists, `git_repo` is inside a git work
/// tree; relative paths resolve against `working_dir`); empty when all pass.
std::vector<std::string> check_context(const recipe& r, const std::string& working_dir);

}  // namespace arun::io
