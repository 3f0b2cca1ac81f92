#pragma once

namespace arun::cli {

// Exit codes (docs/reference/exit-codes.md).
inline constexpr int exit_success = 0;
inline constexpr int exit_recipe_failed = 1;
inline constexpr int exit_usage = 2;
inline constexpr int exit_not_found = 3;
inline constexpr int exit_no_recipe = 4;
inline constexpr int exit_waiting_approval = 5;
inline constexpr int exit_budget_exhausted = 6;
inline constexpr int exit_internal_error = 70;  // arun's own fault (EX_SOFTWARE)
inline constexpr int exit_store_failed = 74;    // the session could not be written (EX_IOERR)
inline constexpr int exit_output_failed = 74;   // stdout could not be written (EX_IOERR)

}  // namespace arun::cli
