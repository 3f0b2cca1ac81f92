// arun-soak: pushes N process specs through the supervisor at concurrency C, mixing children
// that obey SIGTERM, ignore it, spawn grandchildren, flood output, exit at once, or leave
// their process group in five ways; one pass per step containment mode. Reports kill
// latencies and, per mode and kind, anything left behind. Exits 1 on any leak a mode promises
// to prevent.
#include "soak_pass.hpp"

#include "process/process_setup.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/prctl.h>

namespace {

using arun::io::containment_request;
using arun::soak::pass_report;

std::string json_counts(const std::map<std::string, std::size_t>& counts) {
  std::string out = "{";
  for (const auto& [k, n] : counts) out += fmt::format("{}\"{}\":{}", out.size() > 1 ? "," : "", k, n);
  return out + "}";
}

std::string json_latency(const arun::soak::percentiles& p) {
  return fmt::format(R"({{"n":{},"p50":{:.3f},"p90":{:.3f},"p99":{:.3f},"max":{:.3f}}})", p.count, p.p50, p.p90,
                     p.p99, p.max);
}

std::string json_pass(const pass_report& r) {
  if (!r.unavailable.empty()) return fmt::format(R"({{"mode":"cgroup","unavailable":"{}"}})", r.unavailable);
  std::size_t left = r.left_in_groups.size();
  for (const auto& [k, n] : r.survivors) left += n;
  return fmt::format(
      R"({{"mode":"{}","wall_s":{:.3f},"timed_out":{},"sigkilled":{},"term_latency_ms":{},"kill_latency_ms":{},)"
      R"("cpu_user_s":{:.3f},"cpu_sys_s":{:.3f},"leaked_processes":{},"survivors":{},"stretched":{},)"
      R"("fds_before":{},"fds_after":{},"unexpected":{},"launch_failures":{},"ok":{}}})",
      r.mode, r.wall_s, r.timed_out, r.killed_hard, json_latency(r.term_latency), json_latency(r.kill_latency),
      r.cpu_user_s, r.cpu_sys_s, left, json_counts(r.survivors), json_counts(r.stretched), r.fds_before,
      r.fds_after, json_counts(r.unexpected), r.launch_failures, r.ok ? "true" : "false");
}

void print_pass(const pass_report& r, const arun::soak::settings& s) {
  if (!r.unavailable.empty()) {
    fmt::print("== containment cgroup: unavailable ({}); not run\n", r.unavailable);
    return;
  }
  fmt::print("== containment {}: {} children, concurrency {}, timeout {} ms, grace {} ms, seed {}: {:.2f} s ({:.0f}/s)\n",
             r.mode, s.count, s.concurrency, s.timeout_ms, s.grace_ms, s.seed, r.wall_s,
             static_cast<double>(s.count) / r.wall_s);
  fmt::print("  {:<30} {:>6} {:>10} {:>10}\n", "kind", "runs", "survivors", "stretched");
  for (const auto& entry : r.per_kind) {
    const std::string& kind = entry.first;  // not a structured binding: clang 14 cannot capture one
    const auto get = [&](const auto& m) { return m.contains(kind) ? m.at(kind) : 0; };
    fmt::print("  {:<30} {:>6} {:>10} {:>10}\n", kind, entry.second, get(r.survivors), get(r.stretched));
  }
  if (r.survivors.contains("unknown")) fmt::print("  {:<30} {:>6} {:>10}\n", "(unknown kind)", "", r.survivors.at("unknown"));
  fmt::print("supervisor CPU: user {:.2f} s, sys {:.2f} s\n", r.cpu_user_s, r.cpu_sys_s);
  fmt::print("timed out: {} (SIGKILL needed: {})\n", r.timed_out, r.killed_hard);
  fmt::print("deadline -> SIGTERM:       {}\n", arun::soak::format(r.term_latency));
  fmt::print("SIGTERM+grace -> SIGKILL:  {}\n", arun::soak::format(r.kill_latency));
  fmt::print("processes left in the soak's groups: {}\n", r.left_in_groups.size());
  fmt::print("orphan zombies reaped at the end: {}\n", r.zombies);
  fmt::print("open fds before/after: {}/{}\n", r.fds_before, r.fds_after);
  fmt::print("pipes abandoned (held outside the group): {}, groups with survivors: {}\n", r.abandoned,
             r.group_survivors);
  std::size_t unexpected = r.launch_failures;
  for (const auto& [k, n] : r.unexpected) unexpected += n;
  fmt::print("unexpected outcomes: {}, launch failures: {}\n", unexpected, r.launch_failures);
  for (const auto& p : r.left_in_groups) fmt::print("  LEAK (group): {}\n", p);
  if (r.mode == "group")
    fmt::print("(group mode: escaped processes survive and writers hold the pipes, as documented)\n");
  fmt::print("{}\n", r.ok ? "pass: ok" : "pass: FAILED");
}

}  // namespace

int main(int argc, char** argv) {
  arun::soak::settings s;
  bool json = false;
  std::vector<std::string> modes{"cgroup", "subreaper", "group"};
  CLI::App app{"arun-soak: process supervisor soak test (see docs/soak.md)", "soak"};
  app.add_option("--count", s.count, "Process specs to run per pass")->check(CLI::PositiveNumber);
  app.add_option("--concurrency", s.concurrency, "Children at once")->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", s.timeout_ms, "Deadline of the children that must be stopped")->check(CLI::PositiveNumber);
  app.add_option("--grace-ms", s.grace_ms, "SIGTERM -> SIGKILL grace period")->check(CLI::NonNegativeNumber);
  app.add_option("--flood-bytes", s.flood_bytes, "Bytes each flooding child writes");
  app.add_option("--seed", s.seed, "Seed of the child mix");
  app.add_option("--stretch-slack-ms", s.stretch_slack_ms,
                 "How long past timeout + grace a stopped child may end before it counts as stretched")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--containment", modes, "Containment modes, one pass each (cgroup, subreaper, group, auto)")
      ->delimiter(',')
      ->check(CLI::IsMember({"cgroup", "subreaper", "group", "auto"}));
  app.add_flag("--json", json, "Print the report as JSON");
  CLI11_PARSE(app, argc, argv);

  arun::io::prepare_supervisor_process();
  // Orphaned grandchildren re-parent to the soak, so none can escape the leak check.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  bool ok = true;
  std::string passes;
  for (const auto& mode : modes) {
    const auto report = arun::soak::run_pass(s, *arun::io::parse_containment_request(mode));
    ok = ok && report.ok;
    if (json)
      passes += (passes.empty() ? "" : ",") + json_pass(report);
    else
      print_pass(report, s);
  }
  if (json)
    fmt::print(R"({{"count":{},"concurrency":{},"passes":[{}],"ok":{}}})" "\n", s.count, s.concurrency, passes,
               ok ? "true" : "false");
  else
    fmt::print("{}\n", ok ? "soak: ok" : "soak: FAILED");
  return ok ? 0 : 1;
}
