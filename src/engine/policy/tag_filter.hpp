#pragma once
// docs/reference/recipe.md, "Tags": which steps `--include-tags` / `--exclude-tags` let run.

#include <optional>
#include <string>
#include <vector>

namespace arun::engine {

/// Whether a step with `when_tags` runs. A step without tags always runs; otherwise it is
/// skipped when any of its tags is in `exclude`, or when `include` is non-empty and none of
/// its tags is in it. Tags compare exactly (case-sensitive); exclusion wins over inclusion.
bool tags_allow(const std::vector<std::string>& when_tags, const std::vector<std::string>& include,
                const std::vector<std::string>& exclude);

/// Why `tags_allow` refuses, for progress and results: "tag 'slow' is excluded" (the first
/// excluded tag in `when_tags` order) or "none of its tags (a, b) is included". No value
/// when the step runs.
std::optional<std::string> tag_skip_reason(const std::vector<std::string>& when_tags,
                                           const std::vector<std::string>& include,
                                           const std::vector<std::string>& exclude);

}  // namespace arun::engine
