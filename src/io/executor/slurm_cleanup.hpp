#pragma once
// Removing what a run left on Slurm's shared directory (docs/scale-out.md, "Job files"): a
// job's directory once arun has its result, a session's whole `jobs/SESSION` when the session
// is removed. The shared directory is a place other users can reach, so the removal never
// follows a symbolic link: every directory is opened relative to its parent's descriptor with
// O_NOFOLLOW, and a link found inside is unlinked itself, never what it points at
// (docs/security.md, "Slurm's shared directory").

#include <string>
#include <string_view>

namespace arun::io {

/// Removes `name` in the directory open as `parent_fd`, and everything below it, without
/// following a symbolic link anywhere (a link named `name` is itself removed). Empty on
/// success (also when `name` is already gone), else why not.
std::string remove_tree_at(int parent_fd, const std::string& name);

/// Removes the job directory `dir` (a path arun made: SHARED/jobs/SESSION/NAME), as
/// remove_tree_at does. Empty on success or when it is gone.
std::string remove_slurm_job_directory(const std::string& dir);

/// Removes the session's job directory below `shared_dir` (SHARED/jobs/NAME, NAME as `record`
/// — the session's `slurm-jobs` file — keeps it; see recorded_jobs_dir_name): only a real
/// directory (not a link) that the user owns; anything else is left alone and said. Empty on
/// success or when there is none.
std::string remove_slurm_session_files(const std::string& shared_dir, std::string_view session_id,
                                       const std::string& record);

}  // namespace arun::io
