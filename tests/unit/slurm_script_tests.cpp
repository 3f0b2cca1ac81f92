// What the slurm executor gives sbatch: job directories, sbatch options from a step's
// resources, Slurm's time syntax, and the wrapper's exit file.
#include <catch2/catch.hpp>

#include "agents/agent_cli.hpp"
#include "executor/slurm_lookups.hpp"
#include "executor/slurm_pending.hpp"
#include "executor/slurm_script.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <variant>
#include <string>
#include <vector>

using namespace arun::io;
using namespace std::chrono_literals;

namespace {

bool has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

}  // namespace

TEST_CASE("slurm job directories are readable, distinct for distinct keys, and the same on resume") {
  const auto a = slurm_job_files_for("/shared/jobs/S1-0123", "loop[3]/step a");
  CHECK(a.dir.starts_with("/shared/jobs/S1-0123/loop_3__step_a-"));
  CHECK(slurm_job_files_for("/shared/jobs/S1-0123", "loop[3]/step a").dir == a.dir);
  CHECK(slurm_job_files_for("/shared/jobs/S2-4567", "loop[3]/step a").dir != a.dir);
  CHECK(slurm_job_files_for("/shared/jobs/S1", "a/b").dir != slurm_job_files_for("/shared/jobs/S1", "a_b").dir);
  CHECK(slurm_job_files_for("/shared/jobs/S1", "../../etc").dir.find("/../") == std::string::npos);
  CHECK(a.status() == a.dir + "/exit");
  CHECK(slurm_job_files_for("/s/jobs/S", std::string(500, 'x')).dir.size() < 120);
}

TEST_CASE("sbatch options come from the step's resources and name the session and instance") {
  const auto files = slurm_job_files_for("/shared/jobs/S1", "build");
  job_resources r;
  r.cpus = 4;
  r.memory = "8G";
  r.partition = "short";
  r.gpus = "a100:1";
  r.licenses = {{"claude", 1}, {"codex", 2}};
  r.extra = {"--account=lab", "--qos=high"};
  const auto args = sbatch_arguments(files, sbatch_resource_options(r, 3700s), "arun-S1", "build");
  CHECK(args.front() == "sbatch");
  CHECK(args.back() == files.script());
  for (const auto* expected : {"--parsable", "--job-name=arun-S1", "--comment=build", "--cpus-per-task=4", "--mem=8G",
                               "--partition=short", "--gpus=a100:1", "--licenses=claude:1,codex:2", "--account=lab",
                               "--qos=high", "--time=0-01:02:00"})
    CHECK(has(args, expected));
  // The step's own `time` wins over the backstop arun derives from its timeout.
  r.time = 120s;
  CHECK(has(sbatch_resource_options(r, 3700s), "--time=0-00:02:00"));
  // No resources: no resource options, and no --time without a deadline.
  const auto bare = sbatch_arguments(files, sbatch_resource_options({}, std::nullopt), "n", "k");
  CHECK(std::none_of(bare.begin(), bare.end(), [](const std::string& a) {
    return a.starts_with("--time") || a.starts_with("--mem") || a.starts_with("--cpus");
  }));
}

TEST_CASE("an agent job takes one license of its provider unless the step names that license") {
  CHECK(with_provider_license(nullptr, "claude").licenses == std::map<std::string, int, std::less<>>{{"claude", 1}});
  job_resources r;
  r.cpus = 2;
  r.licenses = {{"claude", 3}, {"db", 1}};
  const auto kept = with_provider_license(&r, "claude");
  CHECK(kept.licenses == r.licenses);  // the step's own count wins
  CHECK(kept.cpus == 2);
  CHECK(with_provider_license(&r, "codex").licenses ==
        std::map<std::string, int, std::less<>>{{"claude", 3}, {"codex", 1}, {"db", 1}});
}

TEST_CASE("the cluster's license names are read from scontrol show licenses") {
  const auto names = parse_license_names(
      "LicenseName=claude Total=20 Used=3 Free=17 Reserved=0 Remote=no\n"
      "LicenseName=codex@db Total=2 Used=0 Free=2 Reserved=0 Remote=yes\n");
  CHECK(names == std::set<std::string, std::less<>>{"claude", "codex@db"});
  // The multi-line form (without --oneliner) and no licenses at all.
  CHECK(parse_license_names("LicenseName=fake\n    Total=1 Used=0 Free=1\n") == std::set<std::string, std::less<>>{"fake"});
  CHECK(parse_license_names("No licenses configured\n").empty());
}

TEST_CASE("an earlier run's jobs are found by their comment and the newest job of an instance wins") {
  const auto jobs = parse_jobs_by_comment(
      "17 RUNNING each[1]\n9 PENDING loop[2]/step a\n21 RUNNING each[1]\n103 PENDING each[1]\n\nbad\n5 RUNNING\n");
  CHECK(jobs == std::map<std::string, std::string, std::less<>>{{"each[1]", "103"}, {"loop[2]/step a", "9"}});
  CHECK(parse_jobs_by_comment("").empty());
}

TEST_CASE("an earlier run's jobs are listed with their states, each array task on its own") {
  const auto states = parse_job_states("40_0 RUNNING arun-array-x-1\n40_3 PENDING arun-array-x-1\n41 COMPLETING each[2]\n\nbad\n");
  CHECK(states == std::map<std::string, std::string, std::less<>>{
                      {"40_0", "RUNNING"}, {"40_3", "PENDING"}, {"41", "COMPLETING"}});
  CHECK(parse_job_states("").empty());
}

TEST_CASE("an array job's script runs the wrapper of the job directory its task is given") {
  const auto array = slurm_array_files_for("/shared/jobs/S1", "1a2b", 3);
  CHECK(array.list() == "/shared/jobs/S1/arrays/1a2b-3.list");
  CHECK(array.script() == "/shared/jobs/S1/arrays/1a2b-3.sh");
  CHECK(array.comment() == "arun-array-1a2b-3");
  // Another arun of the session (a resume) names its arrays apart.
  CHECK(slurm_array_files_for("/shared/jobs/S1", "77ff", 3).list() != array.list());
  const auto script = slurm_array_script(array);
  CHECK_THAT(script, Catch::Contains("mapfile -t dirs < '/shared/jobs/S1/arrays/1a2b-3.list'") &&
                         Catch::Contains("${dirs[$SLURM_ARRAY_TASK_ID]}/run.sh"));
  const auto args = sbatch_array_arguments(array, 5, {"--ntasks=1", "--mem=1G"}, "arun-S1");
  for (const auto* expected : {"--parsable", "--job-name=arun-S1", "--comment=arun-array-1a2b-3", "--array=0-4",
                               "--output=/shared/jobs/S1/arrays/1a2b-3.%a.log", "--mem=1G"})
    CHECK(has(args, expected));
  CHECK(args.back() == array.script());
  CHECK(has(sbatch_array_arguments(array, 5, {}, "arun-S1", 3), "--array=0-4%3"));  // a task limit
  // A task names itself ARRAY_TASK in its exit file, as squeue --array lists it: the array's
  // script hands it over, as an inherited SLURM_ARRAY_* may be the caller's.
  CHECK_THAT(script, Catch::Contains("\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\""));
  const auto wrapper = slurm_wrapper_script(slurm_job_files_for("/shared/jobs/S1", "k"), "/w", false);
  CHECK_THAT(wrapper, Catch::Contains("job=${1:-$SLURM_JOB_ID}"));
  CHECK_THAT(wrapper, !Catch::Contains("SLURM_ARRAY_JOB_ID"));
}

TEST_CASE("an instance's job record says submitting or the job's id") {
  CHECK(is_slurm_job_id("123"));
  CHECK(is_slurm_job_id("123_4"));
  for (const char* bad : {"", "_4", "123_", "12a", "1_2_3", "submitting"}) CHECK_FALSE(is_slurm_job_id(bad));
  const auto plain = parse_slurm_job_record("123\n");
  REQUIRE(plain);
  CHECK(plain->id == "123");
  const auto task = parse_slurm_job_record("77_12\n");
  REQUIRE(task);
  CHECK(task->id == "77_12");
  const auto done = parse_slurm_job_record("done 77_12\n");
  REQUIRE(done);
  CHECK(done->id == "77_12");
  CHECK(done->done);
  CHECK_FALSE(task->done);
  CHECK_FALSE(parse_slurm_job_record("done x"));
  const auto cancelling = parse_slurm_job_record("cancelling 77_12\n");
  REQUIRE(cancelling);
  CHECK(cancelling->id == "77_12");
  CHECK(cancelling->cancelling);
  CHECK_FALSE(cancelling->done);
  CHECK_FALSE(done->cancelling);
  CHECK_FALSE(parse_slurm_job_record("cancelling "));
  const auto submitting = parse_slurm_job_record("submitting\n");
  REQUIRE(submitting);
  CHECK(submitting->id.empty());
  CHECK(submitting->array_comment.empty());
  const auto in_array = parse_slurm_job_record("submitting arun-array-1a2b-4 9\n");
  REQUIRE(in_array);
  CHECK(in_array->array_comment == "arun-array-1a2b-4");
  CHECK(in_array->task == 9);
  for (const char* bad : {"", "garbage", "submitting arun-array-4", "submitting arun-array-4 x"})
    CHECK_FALSE(parse_slurm_job_record(bad));
}

TEST_CASE("pending reasons that mean never are told from those that mean wait") {
  CHECK_THAT(slurm_never_starts("PartitionTimeLimit"), Catch::Contains("resources.time"));
  CHECK_FALSE(slurm_never_starts("QOSMaxWallDurationPerJobLimit").empty());
  CHECK_FALSE(slurm_never_starts("InvalidAccount").empty());
  for (const char* waiting :
       {"Resources", "Priority", "Licenses", "None", "ReqNodeNotAvail", "JobHeldUser", "PartitionNodeLimit", ""})
    CHECK(slurm_never_starts(waiting).empty());
}

TEST_CASE("an agent CLI's provider is the license name its jobs take") {
  const auto of = [](std::string_view name) {
    return provider_name(std::get<agent_cli>(parse_agent_cli(name, "/opt/fake-agent")));
  };
  CHECK(of("claude") == "claude");
  CHECK(of("codex") == "codex");
  CHECK(of("copilot") == "copilot");
  CHECK(of("amplihack:codex") == "codex");
  CHECK(of("amplihack") == "claude");
  CHECK(of("fake") == "fake");
  CHECK(provider_name(std::get<agent_cli>(parse_agent_command("/usr/local/bin/gemini -p {prompt_file}"))) == "gemini");
}

TEST_CASE("Slurm time limits round up to whole minutes") {
  CHECK(slurm_time(1s) == "0-00:01:00");
  CHECK(slurm_time(60s) == "0-00:01:00");
  CHECK(slurm_time(61s) == "0-00:02:00");
  CHECK(slurm_time(std::chrono::hours(25)) == "1-01:00:00");
}

TEST_CASE("the wrapper's exit file gives its job, and an exit code, a signal or why the step could not start") {
  const auto zero = parse_slurm_exit("job 41\nexit 0\n");
  REQUIRE(zero);
  CHECK(zero->job_id == "41");
  CHECK(zero->exit_code == 0);
  CHECK(parse_slurm_exit("job 7\nexit 3")->exit_code == 3);
  const auto killed = parse_slurm_exit("job 7\nexit 143\n");
  CHECK_FALSE(killed->exit_code);
  CHECK(killed->signal == 15);
  // Above 128 + 64 no signal exists: an exit code (ssh's 255).
  CHECK(parse_slurm_exit("job 7\nexit 255")->exit_code == 255);
  CHECK_FALSE(parse_slurm_exit("job 7\nexit 255")->signal);
  CHECK(parse_slurm_exit("job 7\nerror cannot enter the working directory")->error == "cannot enter the working directory");
  CHECK_FALSE(parse_slurm_exit(""));
  CHECK_FALSE(parse_slurm_exit("exit 0"));  // no job line: not the wrapper's
  CHECK_FALSE(parse_slurm_exit("job 7\nexit"));
  CHECK_FALSE(parse_slurm_exit("job 7\nexit 3x"));
  CHECK_FALSE(parse_slurm_exit("job 7\nexit 300"));
}

TEST_CASE("the wrapper's exit file gives how long the job ran by the node's clock, in any locale, when bash could tell") {
  const auto timed = parse_slurm_exit("job 41\nexit 0\ntimes 1732874400.250000 1732874401.500001\n");
  REQUIRE(timed);
  CHECK(timed->exit_code == 0);
  REQUIRE(timed->ran);
  CHECK(*timed->ran == 1250001us);
  // A locale that writes a decimal comma; a wrapper that could not start the command.
  CHECK(parse_slurm_exit("job 41\nexit 3\ntimes 100,5 102,0")->ran == 1500ms);
  const auto refused = parse_slurm_exit("job 7\nerror cannot enter the working directory\ntimes 100.0 100.25\n");
  REQUIRE(refused);
  CHECK(refused->error == "cannot enter the working directory");
  CHECK(refused->ran == 250ms);
  // bash 4 has no $EPOCHREALTIME: no run time, the status as before; nonsense is no time.
  const auto old_bash = parse_slurm_exit("job 7\nexit 0\ntimes  \n");
  REQUIRE(old_bash);
  CHECK(old_bash->exit_code == 0);
  CHECK_FALSE(old_bash->ran);
  CHECK_FALSE(parse_slurm_exit("job 7\nexit 0\ntimes 5.0 4.0")->ran);
  CHECK_FALSE(parse_slurm_exit("job 7\nexit 0\ntimes x.1 5.0")->ran);
  CHECK_FALSE(parse_slurm_exit("job 7\nexit 0")->ran);
  // The wrapper writes them.
  const auto script = slurm_wrapper_script(slurm_job_files{"/shared/j"}, "/work", false);
  CHECK(script.find("started=${EPOCHREALTIME:-}") != std::string::npos);
  CHECK(script.find("times %s %s") != std::string::npos);
}

TEST_CASE("a job's time in the queue is its total less its run, or until it was seen running, or all of it") {
  // The wrapper measured 1 s of a 37 s total: 36 s queued.
  CHECK(slurm_queue_time(37s, 1s, 30s, true) == 36s);
  // Clocks that drift: never below zero.
  CHECK(slurm_queue_time(2s, 3s, std::nullopt, true) == 0s);
  // No run time from the wrapper: until a poll saw it running.
  CHECK(slurm_queue_time(10s, std::nullopt, 4s, true) == 4s);
  // Cancelled or refused while pending: all of it.
  CHECK(slurm_queue_time(10s, std::nullopt, std::nullopt, false) == 10s);
  // It ran (an exit file) but nothing says when it started: unknown.
  CHECK_FALSE(slurm_queue_time(10s, std::nullopt, std::nullopt, true));
}

TEST_CASE("the wrapper quotes its paths and writes the exit file atomically") {
  const slurm_job_files files{"/shared/it's here"};
  const auto script = slurm_wrapper_script(files, "/work/$(rm -rf x)", false);
  CHECK(script.starts_with("#!/bin/bash\n"));
  CHECK(script.find("dir='/shared/it'\\''s here'") != std::string::npos);
  CHECK(script.find("cd -- '/work/$(rm -rf x)'") != std::string::npos);
  CHECK(script.find("mv -f -- \"$dir/exit.tmp\" \"$dir/exit\"") != std::string::npos);
  CHECK(script.find("$SLURM_JOB_ID") != std::string::npos);
  // The step reads /dev/null, or its input file when it has one (an agent's prompt).
  CHECK(script.find("2> \"$dir/err\" < /dev/null\n") != std::string::npos);
  const auto with_input = slurm_wrapper_script(files, "/work", true);
  CHECK(with_input.find("2> \"$dir/err\" < \"$dir/stdin\"\n") != std::string::npos);
  CHECK(with_input.find("/dev/null") == std::string::npos);
}

TEST_CASE("slurm: MaxArraySize is read from scontrol show config") {
  CHECK(parse_max_array_size("AuthType                = auth/none\nMaxArraySize            = 1001\nMaxJobCount = 10000\n") ==
        std::size_t{1001});
  CHECK(parse_max_array_size("MaxArraySize = 0\n") == std::size_t{0});
  CHECK_FALSE(parse_max_array_size("MaxArraySizeX = 5\n").has_value());
  CHECK_FALSE(parse_max_array_size("MaxArraySize = many\n").has_value());
  CHECK_FALSE(parse_max_array_size("").has_value());
}

TEST_CASE("slurm: the job ids of an squeue listing, array tasks one by one") {
  const auto ids = parse_job_ids("12 arun/each[0]\n13_0 arun-array-x-1\n13_1 arun-array-x-1\n\n");
  CHECK(ids == std::set<std::string, std::less<>>{"12", "13_0", "13_1"});
  CHECK(parse_job_ids("").empty());
}
