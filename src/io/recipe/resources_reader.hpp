#pragma once
// Reading `resources:` (a step's, a loop's or the recipe's) and a step's `executor:`: every
// value is checked when the recipe loads, with its position, so a typo in a memory size or a
// Slurm option fails `validate` instead of a submission an hour into a run.

#include "recipe/yaml_fields.hpp"

#include <arun/recipe.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// The `resources` mapping of `f`'s map; null when absent (or nothing valid was written).
std::shared_ptr<const step_resources> read_resources(const field_reader& f);

/// A `resources.time` text: a duration with units ("90m", "2h", "1h30m", "45s", "1d") or
/// Slurm's "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS". A bare number is refused:
/// it means seconds in arun's timeouts but minutes in Slurm's --time.
std::optional<std::chrono::seconds> parse_resource_time(std::string_view text);

/// Why `option` cannot be one of resources.extra (an option arun sets itself, or one with a
/// field of its own); empty when it can.
std::string refused_extra_option(std::string_view option);

}  // namespace arun::io
