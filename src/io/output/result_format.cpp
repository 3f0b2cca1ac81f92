#include "output/result_format.hpp"

#include "files/json_text.hpp"
#include "output/event_json.hpp"
#include "output/output_values.hpp"
#include "output/secret_masker.hpp"
#include "output/terminal_text.hpp"
#include "output/value_summary.hpp"

#include <boost/json/array.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

namespace arun::io {
namespace {

// RFC 3339 (UTC, milliseconds), null for an instance that never started.
boost::json::value time_or_null(std::chrono::system_clock::time_point t) {
  if (t == std::chrono::system_clock::time_point{}) return nullptr;
  return boost::json::string(format_rfc3339_ms(t));
}

std::string iterations_text(const iteration_counts& c) {
  std::string text = fmt::format(" iterations {}/{} completed", c.completed, c.total);
  if (c.cached > 0) text += fmt::format(" ({} cached)", c.cached);
  if (c.failed > 0) text += fmt::format(", {} failed", c.failed);
  if (c.skipped > 0) text += fmt::format(", {} skipped", c.skipped);
  if (c.cancelled > 0) text += fmt::format(", {} cancelled", c.cancelled);
  if (c.not_run > 0) text += fmt::format(", {} not run", c.not_run);
  if (c.waiting > 0) text += fmt::format(", {} waiting for approval", c.waiting);
  return text;
}

constexpr std::size_t excerpt_columns = 200;

bool looks_like_error(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"error", "fatal", "exception", "traceback", "panic", "failed", "denied", "not found"})
    if (lower.find(word) != std::string::npos) return true;
  return false;
}

// The first of a loop's failed iterations, one line each, under the loop's line: which items
// failed is what the reader needs next (all of them: the JSON result, `arun logs ID --failed`).
constexpr std::size_t failed_instances_in_text = 5;

void append_failed_instances(std::string& text, const step_result& s, std::size_t column) {
  const std::string pad(column, ' ');
  // The failure the loop's own line already names (it stopped the loop) is not said twice.
  std::vector<const failed_instance*> failed;
  const auto named = failure_origin(s.error);
  for (const auto& f : s.failed_instances)
    if (f.instance != named) failed.push_back(&f);
  for (std::size_t i = 0; i < failed.size() && i < failed_instances_in_text; ++i) {
    // "step 'fan[3]': exit code 1" under "fan[3]" says its name twice.
    // "step 'fan[3]': exit code 1" (or "step 'fan[3]' (item: x): …") as "fan[3]: exit code 1".
    const auto& instance = failed[i]->instance;
    const auto& error = failed[i]->error;
    const auto line = failure_origin(error) == instance ? instance + error.substr(instance.size() + 7) : instance + ": " + error;
    text += fmt::format("{}failed {}\n", pad, printable_text(line));
  }
  if (failed.size() > failed_instances_in_text)
    text += fmt::format("{}… and {} more failed\n", pad, thousands(failed.size() - failed_instances_in_text));
}

}  // namespace

std::string duration_text(const step_result& s) {
  auto text = fmt::format("{:.2f}s", seconds_of(s.duration));
  if (s.queued) text += fmt::format(", queued {:.1f}s", seconds_of(*s.queued));
  return text;
}

namespace {

void append_step_text(std::string& text, const step_result& s, int depth, const log_locator& logs) {
  const std::string indent(static_cast<std::size_t>(2 + 2 * depth), ' ');
  // A cached leaf says so where its status goes: it completed without running.
  text += fmt::format("{}{:<9} {}", indent, s.cached ? "cached" : to_string(s.status), s.step_id);
  // An instance that never started has no duration to show (and a `(0.00s)` would say it ran).
  if (s.ran() || s.queued) text += fmt::format(" ({})", duration_text(s));
  if (s.iterations) text += iterations_text(*s.iterations);
  if (!s.error.empty()) text += fmt::format(" {}", first_line(s.error));
  text += "\n";
  // A failure's own lines, under the step it ended (a sub-recipe step's come with its child).
  if (s.status == step_status::failed && s.children.empty()) {
    const std::string detail(indent.size() + 10, ' ');
    for (const auto& line : failure_excerpt(s.error)) text += fmt::format("{}| {}\n", detail, line);
    if (logs)
      if (const auto log = logs(failure_origin(s.error)); !log.empty()) text += fmt::format("{}log: {}\n", detail, log);
  }
  append_failed_instances(text, s, indent.size() + 10);
  for (const auto& child : s.children) append_step_text(text, child, depth + 1, logs);
}

// Whether the run's error is a line the step listing already shows (a failed step's, a
// child's or a failed iteration's): said once, where the reader looks first.
bool shown_in_steps(const std::vector<step_result>& steps, std::string_view error) {
  for (const auto& s : steps) {
    if (!s.error.empty() && first_line(s.error) == error) return true;
    for (const auto& f : s.failed_instances)
      if (first_line(f.error) == error) return true;
    if (shown_in_steps(s.children, error)) return true;
  }
  return false;
}

// `2 steps: 1 completed, 1 failed · 3 iterations: 1 completed, 1 failed, 1 not run`.
std::string summary_text(const run_result& r) {
  std::map<step_status, std::size_t> steps;
  iteration_counts loops;
  bool any_loop = false;
  std::size_t cached_steps = 0;
  for (const auto& s : r.step_results) {
    ++steps[s.status];
    cached_steps += s.cached ? 1 : 0;
    if (!s.iterations) continue;
    any_loop = true;
    const auto& c = *s.iterations;
    loops.total += c.total, loops.completed += c.completed, loops.failed += c.failed, loops.skipped += c.skipped;
    loops.cancelled += c.cancelled, loops.not_run += c.not_run, loops.waiting += c.waiting, loops.cached += c.cached;
  }
  std::string text = fmt::format("{} step{}:", thousands(r.step_results.size()), r.step_results.size() == 1 ? "" : "s");
  const char* separator = " ";
  for (const auto status : {step_status::completed, step_status::degraded, step_status::failed, step_status::cancelled,
                            step_status::skipped, step_status::not_run})
    if (steps[status] > 0) {
      text += fmt::format("{}{} {}", separator, thousands(steps[status]), status == step_status::not_run ? "not run" : to_string(status));
      if (status == step_status::completed && cached_steps > 0) text += fmt::format(" ({} cached)", thousands(cached_steps));
      separator = ", ";
    }
  if (any_loop) {
    text += fmt::format(" · {} iteration{}: {} completed", thousands(loops.total), loops.total == 1 ? "" : "s",
                        thousands(loops.completed));
    if (loops.cached > 0) text += fmt::format(" ({} cached)", thousands(loops.cached));
    for (const auto& [count, what] : {std::pair{loops.failed, "failed"}, {loops.skipped, "skipped"},
                                      {loops.cancelled, "cancelled"}, {loops.not_run, "not run"},
                                      {loops.waiting, "waiting for approval"}})
      if (count > 0) text += fmt::format(", {} {}", thousands(count), what);
  }
  return text;
}

// The recipe's output: short text whole, a longer value as one line.
std::string output_text(const boost::json::value& output) {
  if (const auto* s = output.if_string()) {
    const std::string_view text = *s;
    const auto lines = std::count(text.begin(), text.end(), '\n');
    if (text.size() <= 4096 && lines < 20 && text.find('\n') != std::string_view::npos) {
      std::string out = "output:\n";
      std::string_view rest = text;
      while (!rest.empty()) {
        const auto line = first_line(rest);
        out += fmt::format("  {}\n", line);
        rest.remove_prefix(std::min(rest.size(), line.size() + 1));
      }
      return out;
    }
  }
  return fmt::format("output: {}\n", value_line(output, excerpt_columns));
}

void add_logs(boost::json::object& entry, const step_result& s, const log_locator& logs) {
  if (s.status == step_status::failed && s.children.empty())
    if (const auto log = logs(failure_origin(s.error)); !log.empty()) entry["log"] = log;
  if (auto* failed = entry.if_contains("failed_instances"); failed && failed->is_array())
    for (auto& f : failed->get_array())
    {
      // An iteration with a body has no log of its own: the log of the step inside that failed.
      auto log = logs(std::string(f.at("instance").as_string()));
      if (log.empty()) log = logs(failure_origin(f.at("error").as_string()));
      if (!log.empty()) f.as_object()["log"] = log;
    }
  if (auto* children = entry.if_contains("children"); children && children->is_array())
    for (std::size_t i = 0; i < s.children.size() && i < children->get_array().size(); ++i)
      add_logs(children->get_array()[i].as_object(), s.children[i], logs);
}

}  // namespace

boost::json::object document_header() {
  return {{"format_version", json_format_version}, {"arun_version", ARUN_VERSION}};
}

boost::json::object iterations_to_json(const iteration_counts& c) {
  boost::json::object o;
  o["total"] = c.total;
  o["completed"] = c.completed;
  o["failed"] = c.failed;
  o["skipped"] = c.skipped;
  if (c.waiting > 0) o["waiting"] = c.waiting;
  // Only when there are any: the older shape {total, completed, failed, skipped} stays.
  if (c.cancelled > 0) o["cancelled"] = c.cancelled;
  if (c.not_run > 0) o["not_run"] = c.not_run;
  if (c.cached > 0) o["cached"] = c.cached;
  return o;
}

boost::json::object usage_to_json(const agent_usage& u) {
  boost::json::object o;
  o["provider"] = u.provider;
  o["model"] = u.model;
  o["calls"] = u.calls;
  o["input"] = u.input;
  o["output"] = u.output;
  o["cache_read"] = u.cache_read;
  o["cache_write"] = u.cache_write;
  o["cost_usd"] = u.cost_usd ? boost::json::value(*u.cost_usd) : boost::json::value(nullptr);
  o["calls_without_cost"] = u.calls_without_cost;
  return o;
}

std::optional<agent_usage> usage_from_json(const boost::json::value& v) {
  const auto* o = v.if_object();
  if (!o) return std::nullopt;
  agent_usage u;
  auto text = [&](std::string_view key) {
    const auto* t = o->if_contains(key);
    return t && t->is_string() ? std::string(t->get_string()) : std::string();
  };
  auto count = [&](std::string_view key) -> std::uint64_t {
    const auto* n = o->if_contains(key);
    if (!n || !n->is_number()) return 0;
    const double d = n->to_number<double>();
    return d >= 0 && d < 9007199254740992.0 ? static_cast<std::uint64_t>(d) : 0;
  };
  u.provider = text("provider");
  u.model = text("model");
  u.calls = count("calls");
  u.input = count("input");
  u.output = count("output");
  u.cache_read = count("cache_read");
  u.cache_write = count("cache_write");
  u.calls_without_cost = count("calls_without_cost");
  if (const auto* c = o->if_contains("cost_usd"); c && c->is_number() && c->to_number<double>() >= 0)
    u.cost_usd = c->to_number<double>();
  return u;
}

boost::json::object step_to_json(const step_result& s) {
  boost::json::object o;
  o["step_id"] = s.step_id;
  o["status"] = to_string(s.status);
  o["output"] = s.output;
  o["error"] = text_or_null(s.error);
  o["duration"] = seconds_of(s.duration);
  if (s.queued) o["queued"] = seconds_of(*s.queued);
  o["started_at"] = time_or_null(s.started_at);
  o["ended_at"] = time_or_null(s.ended_at);
  o["attempts"] = s.attempts;
  o["exit_code"] = value_or_null(s.exit_code);
  o["signal"] = value_or_null(s.signal);
  o["timed_out"] = s.timed_out;
  o["truncated"] = s.truncated;
  if (s.cached) o["cached"] = true;  // only then: the shape of other results stays
  if (!s.worktree.empty()) o["worktree"] = s.worktree;
  if (!s.branch.empty()) o["branch"] = s.branch;
  if (s.iterations) o["iterations"] = iterations_to_json(*s.iterations);
  if (!s.failed_instances.empty()) {
    boost::json::array failed;
    for (const auto& f : s.failed_instances) failed.push_back({{"instance", f.instance}, {"error", f.error}});
    o["failed_instances"] = std::move(failed);
  }
  if (s.usage) o["usage"] = usage_to_json(*s.usage);
  if (!s.children.empty()) {
    boost::json::array children;
    for (const auto& child : s.children) children.push_back(step_to_json(child));
    o["children"] = std::move(children);
  }
  return o;
}

std::string failure_origin(std::string_view error) {
  constexpr std::string_view prefix = "step '";
  if (!error.starts_with(prefix)) return {};
  // "step 'ID': WHY", or a failed iteration's "step 'ID' (item: ITEM): WHY" ("(items: A, B)"
  // inside nested loops).
  const auto end = error.find('\'', prefix.size());
  const auto line_end = error.find('\n');
  if (end == std::string_view::npos || (line_end != std::string_view::npos && end > line_end)) return {};
  const auto after = error.substr(end);
  if (!after.starts_with("': ") && !after.starts_with("' (item: ") && !after.starts_with("' (items: ")) return {};
  return std::string(error.substr(prefix.size(), end - prefix.size()));
}

std::vector<std::string> failure_excerpt(std::string_view error) {
  const auto newline = error.find('\n');
  if (newline == std::string_view::npos) return {};
  auto rest = error.substr(newline + 1);
  // stderr's tail comes first, then stdout's after a marker (process_step_runner).
  constexpr std::string_view stdout_marker = "--- stdout ---\n";
  std::string_view err = rest, out;
  if (const auto at = rest.find(stdout_marker); at != std::string_view::npos) {
    err = rest.substr(0, at);
    out = rest.substr(at + stdout_marker.size());
  }
  std::vector<std::string_view> lines;
  for (auto source : {err, out}) {
    while (!source.empty()) {
      const auto line = first_line(source);
      if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back(line);
      source.remove_prefix(std::min(source.size(), line.size() + 1));
    }
    if (!lines.empty()) break;  // stdout only when stderr said nothing
  }
  const std::size_t last = lines.size() > 3 ? lines.size() - 3 : 0;
  std::vector<std::string> excerpt;
  const auto first_error = std::find_if(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(last), looks_like_error);
  if (first_error != lines.begin() + static_cast<std::ptrdiff_t>(last)) {
    excerpt.push_back(shortened_line(*first_error, excerpt_columns));
    if (first_error + 1 != lines.begin() + static_cast<std::ptrdiff_t>(last)) excerpt.emplace_back("…");
  } else if (last > 0) {
    excerpt.emplace_back("…");
  }
  for (auto i = last; i < lines.size(); ++i) excerpt.push_back(shortened_line(lines[i], excerpt_columns));
  return excerpt;
}

namespace {

boost::json::object step_entry(const step_result& s, const log_locator& logs) {
  auto entry = step_to_json(s);
  if (logs) add_logs(entry, s, logs);
  return entry;
}

// Every provider's and model's calls together.
usage_total sum_of(const std::vector<usage_total>& totals) {
  usage_total sum;
  for (const auto& t : totals) {
    sum.calls += t.calls;
    sum.input += t.input;
    sum.output += t.output;
    sum.cache_read += t.cache_read;
    sum.cache_write += t.cache_write;
    sum.cost_usd += t.cost_usd;
    sum.calls_without_cost += t.calls_without_cost;
  }
  return sum;
}

// `{totals: {calls, …, cost_usd, calls_without_cost}, by_model: [{provider, model, …}]}`.
boost::json::object usage_totals_to_json(const std::vector<usage_total>& totals) {
  boost::json::array by_model;
  auto fields = [](const usage_total& t) {
    return boost::json::object{{"calls", t.calls},
                               {"input", t.input},
                               {"output", t.output},
                               {"cache_read", t.cache_read},
                               {"cache_write", t.cache_write},
                               {"cost_usd", t.cost_usd},
                               {"calls_without_cost", t.calls_without_cost}};
  };
  for (const auto& t : totals) {
    auto entry = fields(t);
    entry["provider"] = t.provider;
    entry["model"] = t.model;
    by_model.push_back(std::move(entry));
  }
  return {{"totals", fields(sum_of(totals))}, {"by_model", std::move(by_model)}};
}

// result_to_json's members, `step_results` left empty.
boost::json::object result_fields(const run_result& r) {
  boost::json::object o = document_header();
  o["recipe_name"] = r.recipe_name;
  o["success"] = r.success();
  o["status"] = to_string(r.status);
  o["session_id"] = r.session_id;
  o["duration"] = seconds_of(r.duration);
  o["started_at"] = time_or_null(r.started_at);
  o["ended_at"] = time_or_null(r.ended_at);
  o["output"] = r.output;
  o["context"] = r.context;
  o["step_results"] = boost::json::array();
  o["error"] = text_or_null(r.error);
  if (!r.usage.empty()) o["usage"] = usage_totals_to_json(r.usage);
  if (!r.reused.empty() || !r.changed.empty() || !r.failed_again.empty())
    o["reload"] = {{"reused", boost::json::array(r.reused.begin(), r.reused.end())},
                   {"changed", boost::json::array(r.changed.begin(), r.changed.end())},
                   {"failed", boost::json::array(r.failed_again.begin(), r.failed_again.end())}};
  if (!r.denied.empty()) o["denied"] = boost::json::array(r.denied.begin(), r.denied.end());
  if (!r.waiting.empty()) {
    // `waiting_approval` is the first gate (one gate is the common case, and what scripts
    // read); `waiting_approvals` lists every gate a fan-out left waiting.
    boost::json::array gates;
    for (const auto& w : r.waiting)
      // `step` is the name older readers know; `step_id` is the one every other output uses.
      gates.push_back(boost::json::object{{"step_id", w.step}, {"step", w.step}, {"prompt", sanitize_utf8(w.prompt)}});
    o["waiting_approval"] = gates.front();
    o["waiting_approvals"] = std::move(gates);
  }
  return o;
}

}  // namespace

boost::json::object result_to_json(const run_result& r, const log_locator& logs) {
  auto o = result_fields(r);
  auto& steps = o["step_results"].as_array();
  steps.reserve(r.step_results.size());
  for (const auto& s : r.step_results) steps.push_back(step_entry(s, logs));
  return o;
}

bool write_result_json(const run_result& r, const log_locator& logs, const secret_masker* masker,
                       const std::function<bool(std::string_view)>& write) {
  constexpr std::size_t piece = 64 * 1024;
  std::string text = "{";
  auto add = [&](boost::json::value v) {
    if (masker) masker->mask_json(v);
    text += to_json_text(v);
  };
  bool first = true;
  for (auto& kv : result_fields(r)) {
    if (!first) text += ',';
    first = false;
    text += to_json_text(boost::json::string(kv.key()));
    text += ':';
    if (kv.key() != "step_results") {
      add(std::move(kv.value()));
      continue;
    }
    text += '[';
    for (std::size_t i = 0; i < r.step_results.size(); ++i) {
      if (i) text += ',';
      add(step_entry(r.step_results[i], logs));
      if (text.size() >= piece && !write(std::exchange(text, {}))) return false;
    }
    text += ']';
  }
  text += "}\n";
  return write(text);
}

namespace {

// `12 calls, 118,402 tokens (100,000 in, 18,402 out, 0 cache read, 0 cache write), $0.4200`;
// a cost with `+ N calls of unknown cost`, or `cost unknown` when no call's is known.
std::string usage_line(const usage_total& t) {
  std::string text = fmt::format("{} call{}, {} tokens ({} in, {} out, {} cache read, {} cache write), ",
                                 thousands(t.calls), t.calls == 1 ? "" : "s",
                                 thousands(t.input + t.output + t.cache_read + t.cache_write), thousands(t.input),
                                 thousands(t.output), thousands(t.cache_read), thousands(t.cache_write));
  if (t.calls_without_cost == t.calls) return text + "cost unknown";
  text += fmt::format("${:.4f}", t.cost_usd);
  if (t.calls_without_cost > 0) text += fmt::format(" + {} calls of unknown cost", thousands(t.calls_without_cost));
  return text;
}

std::string usage_text(const std::vector<usage_total>& totals) {
  if (totals.empty()) return {};
  std::string text = "agents: " + usage_line(sum_of(totals)) + "\n";
  if (totals.size() > 1)
    for (const auto& t : totals)
      text += fmt::format("  {} {}: {}\n", t.provider, t.model.empty() ? "(model unknown)" : t.model, usage_line(t));
  return text;
}

}  // namespace

std::string result_to_text(const run_result& r, const log_locator& logs) {
  std::string text = fmt::format("{}: {} in {:.2f}s (session {})\n", r.recipe_name, to_string(r.status),
                                 seconds_of(r.duration), r.session_id);
  for (const auto& s : r.step_results) append_step_text(text, s, 0, logs);
  if (!r.output.is_null()) text += output_text(r.output);
  if (!r.error.empty() && !shown_in_steps(r.step_results, first_line(r.error)))
    text += fmt::format("error: {}\n", first_line(r.error));
  if (!r.step_results.empty()) text += summary_text(r) + "\n";
  text += usage_text(r.usage);
  if (!r.reused.empty() || !r.changed.empty() || !r.failed_again.empty()) {
    auto listed = [](const std::vector<std::string>& ids) {
      std::string out;
      for (std::size_t i = 0; i < ids.size() && i < 10; ++i) out += (i ? ", " : "") + ids[i];
      if (ids.size() > 10) out += fmt::format(", … ({} in all)", thousands(ids.size()));
      return out;
    };
    text += fmt::format("reload: {} kept as recorded (unchanged){}{}", thousands(r.reused.size()),
                        r.reused.empty() ? "" : ": ", listed(r.reused));
    if (!r.changed.empty())
      text += fmt::format("; {} run again (step or inputs changed): {}", thousands(r.changed.size()), listed(r.changed));
    if (!r.failed_again.empty())
      text += fmt::format("; {} failed before, run again: {}", thousands(r.failed_again.size()), listed(r.failed_again));
    text += "\n";
  }
  for (const auto& w : r.waiting) {
    text += fmt::format("waiting for approval at {}:\n", w.step);
    std::string_view prompt = w.prompt;
    // The whole prompt: it is what the person running `arun approve` has to decide on.
    while (!prompt.empty()) {
      const auto line = first_line(prompt);
      text += fmt::format("  {}\n", line);
      prompt.remove_prefix(std::min(prompt.size(), line.size() + 1));
    }
  }
  // What was recorded stays; a resume runs what failed fatally, was cancelled or never ran.
  // Not after a denial that failed the run: a resume meets the same denial (docs/sessions.md,
  // Approvals), so suggesting one would send the reader round in a circle.
  if (!r.denied.empty())
    text += fmt::format("denied: {} (a denial is final: a resume fails there again; run the recipe anew to be asked "
                        "again)\n",
                        fmt::join(r.denied, ", "));
  else if ((r.status == run_status::failed || r.status == run_status::cancelled) && !r.session_id.empty())
    text += fmt::format("resume with: arun resume {}\n", r.session_id);
  if (r.status == run_status::budget_exhausted && !r.session_id.empty())
    text += fmt::format("resume with a larger budget: arun resume {} --max-cost USD (or --max-tokens N)\n", r.session_id);
  if (r.waiting.size() > 1)
    text += fmt::format("decide each with: arun approve {0} --step INSTANCE (or --all), then: arun resume {0}\n",
                        r.session_id);
  else if (!r.waiting.empty())
    text += fmt::format("decide with: arun approve {0} (or arun deny {0}), then: arun resume {0}\n", r.session_id);
  return text;
}

}  // namespace arun::io
