#include "executor/slurm_script.hpp"

#include "executor/shell_exports.hpp"
#include "files/private_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace arun::io {
namespace {

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::optional<int> int_of(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// $EPOCHREALTIME ("1732874400.123456"; a comma in locales that write one) in nanoseconds.
std::optional<std::int64_t> epoch_nanoseconds(std::string_view text) {
  const auto point = text.find_first_of(".,");
  const auto seconds = text.substr(0, point);
  std::int64_t whole = 0;
  const auto [end, ec] = std::from_chars(seconds.data(), seconds.data() + seconds.size(), whole);
  if (ec != std::errc{} || end != seconds.data() + seconds.size() || whole < 0 || whole > 4'000'000'000) return std::nullopt;
  std::int64_t ns = whole * 1'000'000'000;
  if (point == std::string_view::npos) return ns;
  auto fraction = text.substr(point + 1, 9);
  if (fraction.empty() || fraction.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::int64_t scale = 100'000'000;
  for (const char digit : fraction) {
    ns += (digit - '0') * scale;
    scale /= 10;
  }
  return ns;
}

// The run time in the exit file's `times START END` line; nothing when it is missing or
// one of its times is (a wrapper of bash 4, where $EPOCHREALTIME is empty).
std::optional<std::chrono::nanoseconds> run_time(std::string_view lines) {
  constexpr std::string_view key = "times ";
  if (!lines.starts_with(key)) return std::nullopt;
  lines.remove_prefix(key.size());
  lines = lines.substr(0, lines.find('\n'));
  const auto space = lines.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto start = epoch_nanoseconds(lines.substr(0, space)), end = epoch_nanoseconds(lines.substr(space + 1));
  if (!start || !end || *end < *start) return std::nullopt;
  return std::chrono::nanoseconds(*end - *start);
}

}  // namespace

slurm_job_files slurm_job_files_for(const std::string& jobs_dir, std::string_view key) {
  auto readable = file_name_part(key);
  if (readable.size() > 80) readable.resize(80);
  return {fmt::format("{}/{}-{:016x}", jobs_dir, readable, fnv1a(key))};
}

std::string slurm_wrapper_script(const slurm_job_files& files, const std::string& working_dir, bool with_input) {
  // Only bash builtins until the command starts: the node's PATH is not the step's.
  return fmt::format(R"SH(#!/bin/bash
# arun: one step instance as a Slurm job (generated; the files beside it are its own).
dir={dir}
# The job's id first: a file left by another job of the same instance is never taken for this one's.
# A task of an array job is known as ARRAY_TASK, as squeue lists it: the array's script says
# so ($1). Not from SLURM_ARRAY_*: sbatch passes a caller's own (arun inside an array job) on.
job=${{1:-$SLURM_JOB_ID}}
# When the job started and ended, by the node's clock (bash 5; empty before): arun tells the
# step's run time from its time in the queue with them (docs/scale-out.md, queue time).
started=${{EPOCHREALTIME:-}}
finish() {{ printf 'job %s\n%s\ntimes %s %s\n' "$job" "$1" "$started" "${{EPOCHREALTIME:-}}" > "$dir/exit.tmp" && command mv -f -- "$dir/exit.tmp" "$dir/exit"; exit 0; }}
cd -- {work} 2>> "$dir/err" || finish "error cannot enter the working directory (see its stderr)"
mapfile -d '' -t argv < "$dir/argv" && mapfile -d '' -t envv < "$dir/env" || finish "error cannot read the job's files in $dir"
for name in ${{!SLURM_@}}; do envv+=("$name=${{!name}}"); done
# scancel --full signals every process of the job, the step's and this script's: the script
# outlives the TERM (a trap runs only once the step has ended) to write the step's own status.
# In the foreground, the step gets SIGINT and SIGQUIT as it would locally (a background job
# of a script starts with them ignored).
trap ':' TERM
command env -i "${{envv[@]}}" "${{argv[@]}}" > "$dir/out" 2> "$dir/err" < {input}
finish "exit $?"
)SH",
                     fmt::arg("dir", single_quote(files.dir)), fmt::arg("work", single_quote(working_dir)),
                     fmt::arg("input", with_input ? "\"$dir/stdin\"" : "/dev/null"));
}

job_resources with_provider_license(const job_resources* resources, const std::string& provider) {
  job_resources r = resources ? *resources : job_resources{};
  r.licenses.emplace(provider, 1);  // a count the step gives itself wins
  return r;
}

std::string slurm_never_starts(std::string_view reason) {
  if (reason == "PartitionTimeLimit")
    return "its time limit is above the partition's (resources.time, or the step's timeout plus a minute)";
  // Not PartitionNodeLimit: squeue also gives it while the nodes a job needs are down or
  // drained, which maintenance ends.
  if (reason == "PartitionConfig")
    return "it asks for more than the partition allows (resources: time, cpus, mem, gpus; `scontrol show partition` "
           "lists the limits)";
  if (reason == "BadConstraints") return "its constraints cannot be met (resources.extra)";
  if (reason == "InvalidAccount" || reason == "InvalidQOS") return "its account or QOS is not valid (resources.extra)";
  if (reason == "DependencyNeverSatisfied") return "it depends on a job that will not run";
  if (reason.ends_with("PerJobLimit") || reason.ends_with("PerJob"))
    return "it asks for more than a limit per job of your account or QOS allows (resources)";
  return {};
}

std::string slurm_time(std::chrono::seconds limit) {
  auto minutes = (limit.count() + 59) / 60;
  if (minutes < 1) minutes = 1;
  return fmt::format("{}-{:02}:{:02}:00", minutes / (24 * 60), (minutes / 60) % 24, minutes % 60);
}

std::vector<std::string> sbatch_arguments(const slurm_job_files& files, const std::vector<std::string>& resource_options,
                                          std::string_view job_name, std::string_view comment) {
  std::vector<std::string> args = {"sbatch", "--parsable", fmt::format("--job-name={}", job_name),
                                   fmt::format("--comment={}", comment), "--output=" + files.slurm_log(),
                                   "--error=" + files.slurm_log(), "--open-mode=append"};
  args.insert(args.end(), resource_options.begin(), resource_options.end());
  args.push_back(files.script());
  return args;
}

slurm_wait slurm_waiting(std::string_view state, std::string_view reason) {
  slurm_wait w;
  w.waiting = state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_HOLD" || state == "REQUEUE_FED";
  if (!w.waiting) return w;
  if (reason == "None" || reason == "(null)") reason = {};
  // JobHeldAdmin, JobHeldUser, "launch failed requeued held", "job requeued in held state":
  // a held job never starts on its own (`scontrol release` does it).
  w.held = state == "REQUEUE_HOLD" || reason.find("Held") != std::string_view::npos ||
           reason.find("held") != std::string_view::npos;
  w.throttled = reason == "JobArrayTaskLimit";
  w.note = fmt::format("pending ({})", reason.empty() ? state : reason);
  return w;
}

std::string slurm_emergency_stop_marker(const std::string& jobs_dir) { return jobs_dir + "/cancelled-all"; }

slurm_array_files slurm_array_files_for(const std::string& jobs_dir, std::string_view process_tag, std::size_t number) {
  return {jobs_dir + "/arrays",
          fmt::format("{}-{}", file_name_part(process_tag), number)};
}

std::string slurm_array_script(const slurm_array_files& array) {
  return fmt::format(R"SH(#!/bin/bash
# arun: the tasks of one array job (generated). Task I runs the instance whose job directory
# is on line I+1 of {list}.
mapfile -t dirs < {list}
exec /bin/bash "${{dirs[$SLURM_ARRAY_TASK_ID]}}/run.sh" "${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"
)SH",
                     fmt::arg("list", single_quote(array.list())));
}

std::vector<std::string> sbatch_array_arguments(const slurm_array_files& array, std::size_t tasks,
                                                const std::vector<std::string>& resource_options,
                                                std::string_view job_name, int task_limit) {
  auto range = fmt::format("--array=0-{}", tasks - 1);
  if (task_limit > 0) range += fmt::format("%{}", task_limit);
  std::vector<std::string> args = {"sbatch", "--parsable", fmt::format("--job-name={}", job_name),
                                   fmt::format("--comment={}", array.comment()), std::move(range),
                                   "--output=" + array.slurm_log(), "--error=" + array.slurm_log(), "--open-mode=append"};
  args.insert(args.end(), resource_options.begin(), resource_options.end());
  args.push_back(array.script());
  return args;
}

std::vector<std::string> sbatch_resource_options(const job_resources& resources,
                                                 std::optional<std::chrono::seconds> time_limit) {
  std::vector<std::string> args = {"--ntasks=1"};
  if (resources.cpus) args.push_back(fmt::format("--cpus-per-task={}", *resources.cpus));
  if (!resources.memory.empty()) args.push_back("--mem=" + resources.memory);
  if (resources.time) time_limit = resources.time;
  if (time_limit) args.push_back("--time=" + slurm_time(*time_limit));
  if (!resources.partition.empty()) args.push_back("--partition=" + resources.partition);
  if (!resources.gpus.empty()) args.push_back("--gpus=" + resources.gpus);
  if (!resources.licenses.empty()) {
    std::string list;
    for (const auto& [name, count] : resources.licenses) list += fmt::format("{}{}:{}", list.empty() ? "" : ",", name, count);
    args.push_back("--licenses=" + list);
  }
  args.insert(args.end(), resources.extra.begin(), resources.extra.end());
  return args;
}

bool is_slurm_job_id(std::string_view text) {
  const auto digits = [](std::string_view part) {
    return !part.empty() && part.size() < 20 && part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const auto underscore = text.find('_');
  return underscore == std::string_view::npos ? digits(text)
                                              : digits(text.substr(0, underscore)) && digits(text.substr(underscore + 1));
}

std::optional<slurm_job_record> parse_slurm_job_record(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  slurm_job_record r;
  if (is_slurm_job_id(text)) {
    r.id = std::string(text);
    return r;
  }
  if (text.starts_with("done ") && is_slurm_job_id(text.substr(5))) {
    r.id = std::string(text.substr(5));
    r.done = true;
    return r;
  }
  if (text.starts_with("cancelling ") && is_slurm_job_id(text.substr(11))) {
    r.id = std::string(text.substr(11));
    r.cancelling = true;
    return r;
  }
  if (text == "submitting") return r;
  if (!text.starts_with("submitting ")) return std::nullopt;
  text.remove_prefix(11);
  const auto space = text.find(' ');
  if (space == std::string_view::npos || space == 0) return std::nullopt;
  const auto task = int_of(text.substr(space + 1));
  if (!task || *task < 0) return std::nullopt;
  r.array_comment = std::string(text.substr(0, space));
  r.task = static_cast<std::size_t>(*task);
  return r;
}

std::optional<slurm_exit_status> parse_slurm_exit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  slurm_exit_status s;
  if (!text.starts_with("job ")) return std::nullopt;
  const auto line_end = text.find('\n');
  if (line_end == std::string_view::npos) return std::nullopt;
  s.job_id = std::string(text.substr(4, line_end - 4));
  text.remove_prefix(line_end + 1);
  // The status line, then (a wrapper of bash 5) when the job started and ended.
  const auto status_end = text.find('\n');
  if (status_end != std::string_view::npos) {
    s.ran = run_time(text.substr(status_end + 1));
    text = text.substr(0, status_end);
  }
  if (text.starts_with("error ")) {
    s.error = std::string(text.substr(6));
    return s;
  }
  if (!text.starts_with("exit ")) return std::nullopt;
  const auto code = int_of(text.substr(5));
  if (!code || *code < 0 || *code > 255) return std::nullopt;
  // bash reports a command killed by signal N as 128 + N (N up to 64); `exit 255` stays 255.
  if (*code > 128 && *code <= 128 + 64)
    s.signal = *code - 128;
  else
    s.exit_code = *code;
  return s;
}

}  // namespace arun::io
