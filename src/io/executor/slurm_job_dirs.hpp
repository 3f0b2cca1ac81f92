#pragma once
// Where a session's Slurm jobs keep their files (docs/scale-out.md): below the shared
// directory, which other users may share, so every component is checked (trust_directory)
// and the session's own directory is made anew, 0700, under a name no one can guess — no
// one else can plant a job's argv or env in it, or rename it while the job waits.

#include <string>
#include <string_view>

namespace arun::io {

struct slurm_job_dirs {
  std::string shared_dir;  ///< the shared directory to use (the user's subdirectory of a sticky shared one)
  std::string jobs_dir;    ///< SHARED/jobs/SESSION-RANDOM: the session's job directories go in it
  std::string error;       ///< set: refused or not made; said before any job is submitted
};

/// Checks `shared_dir` (made if missing) and its `jobs/`, then the session's job directory:
/// on a fresh run (`resumed` false) one made exclusively, `jobs/SESSION-RANDOM`, whose name is
/// kept in `record` (a file in the private session directory; empty: none kept); on a resume
/// the one `record` names (else, as an older arun named it, `jobs/SESSION`), which must be
/// the user's and private, else a new one is made.
slurm_job_dirs prepare_slurm_job_dirs(const std::string& shared_dir, std::string_view session_id,
                                      const std::string& record, bool resumed);

/// The name in SHARED/jobs of the session's job directory: the one `record` keeps, else (a
/// session of an arun before the random names) the session's id as a file name; "" when the
/// record holds no plain name.
std::string recorded_jobs_dir_name(std::string_view session_id, const std::string& record);

}  // namespace arun::io
