#include "executor/slurm_job_dirs.hpp"

#include "files/directory_trust.hpp"
#include "files/owned_tree.hpp"
#include "files/private_files.hpp"

#include <fmt/format.h>

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

namespace arun::io {
namespace {

std::string random_hex() {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, 0) != sizeof r) return {};
  return fmt::format("{:016x}", r);
}

// The job directory a resume goes on in: the recorded name, when it is a plain name and the
// directory is the user's own and private; "" when there is none to take up.
std::string earlier_jobs_dir(const std::string& jobs, std::string_view session_id, const std::string& record) {
  const auto name = recorded_jobs_dir_name(session_id, record);
  if (name.empty()) return {};
  const auto dir = jobs + "/" + name;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) return {};
  return dir;
}

}  // namespace

std::string recorded_jobs_dir_name(std::string_view session_id, const std::string& record) {
  std::string name;
  // Through the session's descriptor, never blocking: a prune reads the record of every old
  // session, where a FIFO or a link planted as it would hang or lead the read elsewhere.
  if (!record.empty())
    if (auto session = owned_dir::open(std::filesystem::path(record).parent_path().string());
        auto* dir = std::get_if<owned_dir>(&session)) {
      std::string why_not;
      if (auto text = dir->read_file(std::filesystem::path(record).filename().string(), 4096, why_not))
        name = text->substr(0, text->find('\n'));
    }
  const auto id = file_name_part(session_id);
  if (name.empty()) name = id;  // a session of an arun before the random names
  // The record is data: only a name arun gives the session's directory — its id, then "-" and
  // 16 hex digits — is one (never another directory that happens to be in jobs/).
  const bool random_name = name.size() == id.size() + 17 && name.starts_with(id) && name[id.size()] == '-' &&
                           name.find_first_not_of("0123456789abcdef", id.size() + 1) == std::string::npos;
  return id.empty() || (name != id && !random_name) ? std::string() : name;
}

slurm_job_dirs prepare_slurm_job_dirs(const std::string& shared_dir, std::string_view session_id,
                                      const std::string& record, bool resumed) {
  slurm_job_dirs out;
  const auto shared = trust_directory(shared_dir, "--shared-dir", trust_mode::make);
  if (!shared.ok()) return {{}, {}, shared.error};
  out.shared_dir = shared.path;
  // jobs/ is checked as a part of the path: one another user owns or can write lets them
  // rename a session's directory while its jobs wait, and plant their own.
  const auto jobs = trust_directory(out.shared_dir + "/jobs", "--shared-dir", trust_mode::make);
  if (!jobs.ok()) return {{}, {}, jobs.error};
  if (resumed)
    if (auto dir = earlier_jobs_dir(jobs.path, session_id, record); !dir.empty()) {
      out.jobs_dir = std::move(dir);
      return out;
    }
  // 64 random bits: a name another user cannot guess to wait for, and no earlier directory has.
  const auto random = random_hex();
  if (random.empty()) return {{}, {}, fmt::format("cannot name the session's job directory: {}", std::strerror(errno))};
  const auto name = file_name_part(session_id) + "-" + random;
  if (auto error = make_directory_exclusively(jobs.path + "/" + name, ::geteuid()); !error.empty())
    return {{}, {}, std::move(error)};
  out.jobs_dir = jobs.path + "/" + name;
  if (!record.empty() && !replace_private_file(record, name + "\n"))
    return {{}, {}, fmt::format("cannot write {}: {}", record, std::strerror(errno))};
  return out;
}

}  // namespace arun::io
