#include "report/session_report.hpp"

#include "files/json_text.hpp"
#include "files/owned_tree.hpp"
#include "files/text_lines.hpp"
#include "output/event_json.hpp"
#include "output/progress_loops.hpp"
#include "output/result_format.hpp"
#include "session/instance_logs.hpp"
#include "session/journal_spend.hpp"
#include "session/live_status.hpp"
#include "session/session_record.hpp"
#include "session/session_store.hpp"
#include "session/transcripts.hpp"
#include "session/workspaces.hpp"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace arun::io {
namespace {

namespace json = boost::json;
using sys_clock = std::chrono::system_clock;
using detail::enclosing_loop;
using detail::is_iteration;
using detail::without_indices;

std::int64_t epoch_ms(sys_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

json::value time_text(std::int64_t ms) {
  if (ms <= 0) return nullptr;
  return json::value(format_rfc3339_ms(sys_clock::time_point(std::chrono::milliseconds(ms))));
}

double number_member(const json::object& o, std::string_view key, double fallback = 0) {
  const auto* v = o.if_contains(key);
  return v && v->is_number() ? v->to_number<double>() : fallback;
}

// A member of a file arun wrote, of the type the document promises, else null: a damaged
// file's wrong types never reach the document.
json::value string_or_null(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? *v : json::value(nullptr);
}

json::value number_or_null(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_number() ? *v : json::value(nullptr);
}

json::value member_or_null(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? *v : json::value(nullptr);
}

// The counts of instances per status, as the document spells them.
struct status_counts {
  std::size_t by[6] = {};
  std::size_t cached = 0;
  void add(step_status s, bool was_cached) {
    ++by[static_cast<int>(s)];
    if (was_cached) ++cached;
  }
  std::size_t total() const {
    std::size_t n = 0;
    for (auto c : by) n += c;
    return n;
  }
  json::object to_json() const {
    json::object o;
    for (int i = 0; i < 6; ++i) o[to_string(static_cast<step_status>(i))] = by[i];
    o["cached"] = cached;
    return o;
  }
};

// An error without its `step 'ID': ` (or `step 'ID' (item: …): `) prefix: the reason alone,
// the same for every instance of a step.
std::string_view reason_of(std::string_view error) {
  if (!error.starts_with("step '")) return error;
  const auto quote = error.find('\'', 6);
  if (quote == std::string_view::npos) return error;
  auto rest = error.substr(quote + 1);
  if (rest.starts_with(" (")) {
    const auto close = rest.find("): ");
    if (close == std::string_view::npos) return error;
    return rest.substr(close + 3);
  }
  return rest.starts_with(": ") ? rest.substr(2) : error;
}

// One instance, as its last journal record left it: a few numbers, and where that record is
// (read again for the few instances the document lists in full).
struct instance_entry {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;  // of the record's line
  std::uint32_t shape = 0;   // index into report_builder::shapes_
  std::int64_t started = 0, ended = 0;  // epoch ms; 0: never started
  std::uint32_t attempts = 0;
  step_status status = step_status::not_run;
  bool leaf = false, cached = false, fatal = false, loop = false, isolated = false;
  std::uint64_t tokens = 0;
  double cost = 0;
  std::int64_t duration_ms() const { return started > 0 && ended >= started ? ended - started : 0; }
};

// One invocation of the session (`arun RECIPE` or a resume), from its events.
struct run_span {
  std::int64_t started = 0, ended = 0;
  std::string status, error;
  double duration = -1;
  std::size_t steps = 0;
};

struct shape_info {
  std::string name;  // `fan[]/build`
  std::string type;  // from the events: bash, agent, gate, loop, iteration, recipe, hook, stage
};

// The percentile `p` (0..1) of sorted `values`.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto at = static_cast<std::size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(at, sorted.size() - 1)];
}

// The last `max` bytes of a log, from the start of a line when cut; UTF-8 made valid.
json::value log_tail(const owned_dir& session, std::string_view instance, std::size_t max) {
  for (const auto stream : {output_stream::err, output_stream::out}) {
    const auto relative = "logs/" + instance_log_path(instance, stream);
    std::string why;
    auto file = session.open_file(relative, why);
    if (!file || file->size() == 0) continue;
    const auto from = file->size() > max ? file->size() - max : 0;
    auto text = file->read_at(from, static_cast<std::size_t>(file->size() - from), why);
    if (!text) continue;
    std::string_view tail(*text);
    if (from > 0) {
      // From the first whole line, when one ends before the last; a last line longer than the
      // tail is shown from a character boundary instead (never as nothing).
      const auto nl = tail.find('\n');
      if (nl != std::string_view::npos && nl + 1 < tail.size() && tail.find('\n', nl + 1) != std::string_view::npos)
        tail.remove_prefix(nl + 1);
      else
        while (!tail.empty() && (static_cast<unsigned char>(tail.front()) & 0xC0) == 0x80) tail.remove_prefix(1);
    }
    return json::object{{"path", relative},
                        {"stream", to_string(stream)},
                        {"bytes", file->size()},
                        {"text", sanitize_utf8(tail)},
                        {"cut", from > 0}};
  }
  return nullptr;
}

class report_builder {
public:
  report_builder(const owned_dir& session, std::string dir, sys_clock::time_point now, const report_limits& limits)
      : session_(session), dir_(std::move(dir)), now_(now), limits_(limits), live_(session_is_live(dir_)) {}

  void read_journal();
  void read_events();
  void read_transcripts();
  json::object document(const json::object& state, const std::string& id);

private:
  std::uint32_t shape_of(std::string_view instance) {
    auto name = without_indices(instance);
    auto [it, added] = shape_index_.try_emplace(name, static_cast<std::uint32_t>(shapes_.size()));
    if (added) shapes_.push_back({std::move(name), {}});
    return it->second;
  }
  std::optional<finished_instance> record_at(const instance_entry& e) const;
  // A file of the session; none when it is not there (the run made none) or, with `problem`
  // set, when it cannot be read.
  std::optional<owned_file> open_part(std::string_view name, std::string& problem) const {
    std::string why;
    auto file = session_.open_file(name, why);
    if (!file && why.rfind("no such file", 0) != 0) problem = why;
    return file;
  }
  bool ended_run(const std::string& instance, const instance_entry& e) const;
  std::string type_of(const std::string& instance, const instance_entry& e) const;

  json::object session_json(const json::object& state, const std::string& id) const;
  json::array runs_json(const json::object& state) const;
  json::array steps_json() const;
  json::array loops_json() const;
  json::object timeline_json() const;
  json::object failures_json() const;
  json::object usage_json() const;
  json::object gates_json(const json::object& state) const;
  json::object isolation_json() const;
  json::object cache_json() const;

  const owned_dir& session_;
  std::string dir_;
  sys_clock::time_point now_;
  report_limits limits_;
  bool live_ = false;

  // journal.jsonl
  std::optional<owned_file> journal_;
  std::unordered_map<std::string, instance_entry> instances_;
  std::unordered_map<std::string, std::string> failure_origins_;  // failed containers -> the instance named
  std::unordered_map<std::string, std::uint32_t> shape_index_;
  std::vector<shape_info> shapes_;
  std::unordered_map<std::string, std::size_t> loop_items_;  // a loop instance's items, from its record or start
  journal_spend spend_;
  std::size_t damaged_lines_ = 0;
  std::string journal_problem_;

  // events.jsonl
  std::vector<run_span> runs_;
  live_status live_status_;
  std::map<std::string, std::int64_t> open_starts_;  // leaves started in the latest run and not ended
  std::size_t retries_ = 0;
  std::map<std::pair<std::string, std::string>, std::size_t> retry_reasons_;  // (step, reason) -> times
  json::array retry_list_, warnings_, limit_changes_;
  std::size_t warning_count_ = 0, limit_change_count_ = 0;
  std::map<std::string, std::string> gate_prompts_;  // gate instance -> its prompt as asked
  std::string events_problem_;

  // transcripts.jsonl
  std::size_t calls_ = 0, failed_calls_ = 0;
  json::array shown_calls_, shown_failed_calls_;
  std::string transcripts_problem_;
};

std::optional<finished_instance> report_builder::record_at(const instance_entry& e) const {
  if (!journal_) return std::nullopt;
  std::string why;
  auto text = journal_->read_at(e.offset, e.length, why);
  return text ? parse_journal_line(*text) : std::nullopt;
}

void report_builder::read_journal() {
  std::string why;
  journal_ = open_part("journal.jsonl", journal_problem_);
  if (!journal_) return;
  std::size_t line_number = 0;
  const bool read = journal_->each_line(
      [&](std::string_view line, std::uint64_t offset) {
        ++line_number;
        if (line.empty()) return;
        if (auto call = parse_usage_line(line)) {
          spend_.usage_line(call->instance, call->usage);
          return;
        }
        auto record = parse_journal_line(line);
        if (!record) {
          ++damaged_lines_;
          if (is_usage_line(line)) spend_.damaged_line({}, line_number);
          return;
        }
        const auto& r = record->result;
        spend_.record(r.step_id, r.usage ? &*r.usage : nullptr);
        instance_entry e;
        e.offset = offset;
        e.length = static_cast<std::uint32_t>(std::min<std::size_t>(line.size(), UINT32_MAX));
        e.shape = shape_of(r.step_id);
        e.started = r.started_at == sys_clock::time_point{} ? 0 : epoch_ms(r.started_at);
        e.ended = r.ended_at == sys_clock::time_point{} ? 0 : epoch_ms(r.ended_at);
        e.attempts = static_cast<std::uint32_t>(std::max(r.attempts, 0));
        e.status = r.status;
        e.leaf = !r.content_key.empty();
        e.cached = r.cached;
        e.fatal = r.fatal;
        e.loop = r.iterations.has_value();
        e.isolated = !r.worktree.empty() || !r.branch.empty();
        if (e.leaf && r.usage) {
          e.tokens = r.usage->tokens();
          e.cost = r.usage->cost_usd.value_or(0);
        }
        if (r.iterations) loop_items_[r.step_id] = r.iterations->total;
        // A container's failure names the instance it comes from: kept now, so that telling
        // a repeat from a failure of its own reads nothing again.
        if (r.status == step_status::failed && !e.leaf)
          failure_origins_[r.step_id] = failure_origin(r.error);
        else
          failure_origins_.erase(r.step_id);
        instances_[r.step_id] = e;  // the last record of an instance is what it came to
      },
      why);
  if (!read) journal_problem_ = why;
}

void report_builder::read_events() {
  std::string why;
  auto events = open_part("events.jsonl", events_problem_);
  if (!events) return;
  const bool read = events->each_line(
      [&](std::string_view line, std::uint64_t) {
        // Most lines are output lines: passed over before they are parsed.
        if (line.find("\"event\":\"step_output\"") != std::string_view::npos) return;
        if (line.find("\"event\":\"step_heartbeat\"") != std::string_view::npos) return;
        boost::system::error_code ec;
        const auto v = json::parse(line, ec);
        if (ec || !v.is_object()) return;
        const auto& o = v.get_object();
        const auto kind = string_view_member(o, "event");
        const auto ts = parse_rfc3339_ms(string_view_member(o, "ts"));
        if (!ts) return;
        const auto at = epoch_ms(*ts);
        live_status_.add_events(line);
        const std::string step(string_view_member(o, "step"));
        const auto type = string_view_member(o, "type");
        if (!step.empty() && !type.empty()) {
          auto& shape = shapes_[shape_of(step)];
          if (shape.type.empty()) shape.type = std::string(type);
        }
        if (kind == "recipe_start") {
          runs_.push_back({at, 0, {}, {}, -1, static_cast<std::size_t>(count_member(o, "steps").value_or(0))});
          open_starts_.clear();
        } else if (kind == "recipe_end") {
          if (runs_.empty() || runs_.back().ended != 0) return;
          auto& run = runs_.back();
          run.ended = at;
          run.status = std::string(string_view_member(o, "status"));
          run.error = std::string(string_view_member(o, "error"));
          run.duration = number_member(o, "duration", -1);
          open_starts_.clear();
        } else if (kind == "step_start") {
          if (type == "loop") {
            if (o.contains("items")) loop_items_.try_emplace(step, static_cast<std::size_t>(count_member(o, "items").value_or(0)));
          } else if (type == "bash" || type == "agent" || type == "gate") {
            open_starts_[step] = at;
          }
        } else if (kind == "step_end") {
          open_starts_.erase(step);
        } else if (kind == "step_retry") {
          ++retries_;
          const auto error = one_line(string_view_member(o, "error"), 200);
          ++retry_reasons_[{without_indices(step), std::string(reason_of(error))}];
          if (retry_list_.size() < limits_.retries)
            retry_list_.push_back(json::object{{"instance", step},
                                               {"attempt", count_member(o, "attempt").value_or(0)},
                                               {"delay", number_member(o, "delay")},
                                               {"error", error},
                                               {"at", time_text(at)}});
        } else if (kind == "approval_requested") {
          gate_prompts_[step] = std::string(string_view_member(o, "prompt"));
        } else if (kind == "warning") {
          if (warning_count_++ < limits_.listed)
            warnings_.push_back(json::object{{"at", time_text(at)},
                                             {"step", step.empty() ? json::value(nullptr) : json::value(step)},
                                             {"message", string_view_member(o, "message")}});
        } else if (kind == "limit_changed") {
          if (limit_change_count_++ < limits_.listed)
            limit_changes_.push_back(json::object{{"at", time_text(at)},
                                                  {"group", member_or_null(o, "group")},
                                                  {"running", member_or_null(o, "running")},
                                                  {"limit", member_or_null(o, "limit")},
                                                  {"configured", member_or_null(o, "configured")},
                                                  {"reason", member_or_null(o, "reason")}});
        }
      },
      why);
  if (!read) events_problem_ = why;
}

json::string cut_text(std::string_view text, std::size_t max) {
  if (text.size() <= max) return json::string(text);
  const auto end = character_boundary(text, max);
  return json::string(std::string(text.substr(0, end)) + "\n[… " + std::to_string(text.size() - end) + " more bytes]");
}

void report_builder::read_transcripts() {
  std::string why;
  auto file = open_part("transcripts.jsonl", transcripts_problem_);
  if (!file) return;
  const auto max = limits_.transcript_bytes;
  const bool read = file->each_line(
      [&](std::string_view line, std::uint64_t) {
        auto call = parse_transcript_line(line);
        if (!call) return;
        ++calls_;
        const bool failed = !call->error.empty();
        if (failed) ++failed_calls_;
        // Failed calls are shown first; the rest of the room goes to the first calls made.
        auto& list = failed ? shown_failed_calls_ : shown_calls_;
        if (list.size() >= limits_.transcripts) return;
        json::array argv;
        for (const auto& word : call->argv) argv.emplace_back(word);
        list.push_back(json::object{
            {"instance", call->instance},
            {"started_at", time_text(epoch_ms(call->started))},
            {"duration", std::chrono::duration<double>(call->ended - call->started).count()},
            {"model", call->model},
            {"argv", std::move(argv)},
            {"exit_code", call->exit_code ? json::value(*call->exit_code) : json::value(nullptr)},
            {"error", call->error},
            {"usage", call->usage ? json::value(usage_to_json(*call->usage)) : json::value(nullptr)},
            {"system_prompt", cut_text(call->system_prompt, max)},
            {"prompt", cut_text(call->prompt, max)},
            {"reply", cut_text(call->reply, max)},
            {"cut", call->cut || call->prompt.size() > max || call->reply.size() > max ||
                        call->system_prompt.size() > max}});
      },
      why);
  if (!read) transcripts_problem_ = why;
}

// Whether a failure ended the run: fatal where it failed and in every instance around it
// that has a record (a loop under `on_error: continue` records its failed iteration as not
// fatal, and completes).
bool report_builder::ended_run(const std::string& instance, const instance_entry& e) const {
  if (!e.fatal) return false;
  for (auto end = instance.rfind('/'); end != std::string::npos; end = instance.rfind('/', end - 1)) {
    std::string outer = instance.substr(0, end);
    for (;;) {
      const auto around = instances_.find(outer);
      if (around != instances_.end() && (around->second.status != step_status::failed || !around->second.fatal))
        return false;
      if (!is_iteration(outer)) break;
      outer = outer.substr(0, outer.rfind('['));  // the iteration's loop
    }
    if (end == 0) break;
  }
  // The loop of a body-less iteration (`fan[3]`).
  if (is_iteration(instance)) {
    const auto loop = instances_.find(instance.substr(0, instance.rfind('[')));
    if (loop != instances_.end() && (loop->second.status != step_status::failed || !loop->second.fatal)) return false;
  }
  return true;
}

std::string report_builder::type_of(const std::string& instance, const instance_entry& e) const {
  const auto& recorded = shapes_[e.shape].type;
  if (!recorded.empty()) return recorded;
  if (e.loop) return "loop";
  if (e.leaf) return "step";  // a leaf whose events are gone: bash, agent or gate
  return is_iteration(instance) ? "iteration" : "recipe";
}

json::object report_builder::session_json(const json::object& state, const std::string& id) const {
  const auto invocation_of = [&](std::string_view key) -> const json::object* {
    const auto* inv = state.if_contains("invocation");
    if (!inv || !inv->is_object()) return nullptr;
    const auto* v = inv->get_object().if_contains(key);
    return v && v->is_object() ? &v->get_object() : nullptr;
  };
  const auto status = string_member(state, "status");
  json::object s{{"id", id},
                 {"dir", dir_},
                 {"recipe_name", string_or_null(state, "recipe_name")},
                 {"recipe_path", string_or_null(state, "recipe_path")},
                 {"status", status},
                 {"live", live_},
                 // state.json says running and no arun holds the session: that arun died (a
                 // crash, kill -9, a lost machine); `arun resume` takes it up.
                 {"interrupted", status == "running" && !live_},
                 {"created", string_or_null(state, "created")},
                 {"updated", string_or_null(state, "updated")},
                 {"arun_version", string_or_null(state, "arun_version")},
                 {"resumes", count_member(state, "resumes").value_or(0)},
                 {"error", string_or_null(state, "error")},
                 {"failed_instances", count_member(state, "failed_instances").value_or(0)}};
  const auto* inv = state.if_contains("invocation");
  s["working_dir"] = inv && inv->is_object() ? string_or_null(inv->get_object(), "working_dir") : json::value(nullptr);
  const auto* executor = invocation_of("executor");
  s["executor"] = executor ? string_or_null(*executor, "name") : json::value("local");
  const auto* execution = invocation_of("execution");
  s["max_concurrent"] = execution ? number_or_null(*execution, "max_concurrent") : json::value(nullptr);
  // The recipe's output, when small enough to read in a page.
  const auto* output = state.if_contains("output");
  if (output && to_json_text(*output).size() <= 64 * 1024)
    s["output"] = *output;
  else
    s["output"] = nullptr;
  return s;
}

// A state.json `runs` entry as the document has it (every member of its type), or none: a
// damaged entry is left out, never copied as it is.
std::optional<json::object> checked_run_entry(const json::value& v) {
  if (!v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  for (const char* key : {"started_at", "arun_version", "user", "host"})
    if (const auto* m = o.if_contains(key); !m || !m->is_string()) return std::nullopt;
  const auto* pid = o.if_contains("pid");
  const auto* argv = o.if_contains("argv");
  if (!pid || !pid->is_int64() || pid->get_int64() < 1 || !argv || !argv->is_array()) return std::nullopt;
  for (const auto& word : argv->get_array())
    if (!word.is_string()) return std::nullopt;
  json::object out;
  for (const char* key : {"started_at", "arun_version", "pid", "user", "host", "argv"}) out[key] = o.at(key);
  return out;
}

json::array report_builder::runs_json(const json::object& state) const {
  // Who started each run and how: state.json's `runs`, each matched to the run whose
  // recipe_start came next after it (an invocation that stopped before its run started has
  // an entry and no run).
  std::vector<std::pair<std::int64_t, json::object>> entries;
  if (const auto* r = state.if_contains("runs"); r && r->is_array())
    for (const auto& v : r->get_array())
      if (auto entry = checked_run_entry(v))
        if (const auto at = parse_rfc3339_ms(entry->at("started_at").get_string()))
          entries.emplace_back(epoch_ms(*at), std::move(*entry));
  json::array out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    const auto& r = runs_[i];
    json::object o{{"started_at", time_text(r.started)},
                   {"ended_at", time_text(r.ended)},
                   {"status", r.ended ? json::value(r.status) : json::value(nullptr)},
                   {"duration", r.duration >= 0 ? json::value(r.duration) : json::value(nullptr)},
                   {"error", r.error.empty() ? json::value(nullptr) : json::value(r.error)},
                   {"steps", r.steps}};
    // An invocation that never ended: still going (the latest, while live), or killed.
    o["ended"] = r.ended ? "ended" : (i + 1 == runs_.size() && live_ ? "running" : "killed");
    std::optional<json::object> found;
    while (next < entries.size() && entries[next].first <= r.started) found = std::move(entries[next++].second);
    if (found) o["by"] = std::move(*found);
    out.push_back(std::move(o));
  }
  return out;
}

json::array report_builder::steps_json() const {
  struct aggregate {
    status_counts counts;
    std::int64_t first = 0, last = 0;
    std::vector<double> durations;
    std::uint64_t attempts = 0, retried = 0, tokens = 0;
    double cost = 0;
    std::string type;
  };
  std::vector<aggregate> per_shape(shapes_.size());
  for (const auto& [instance, e] : instances_) {
    auto& a = per_shape[e.shape];
    if (a.type.empty()) a.type = type_of(instance, e);
    a.counts.add(e.status, e.cached);
    if (e.started > 0) {
      a.first = a.first == 0 ? e.started : std::min(a.first, e.started);
      a.last = std::max(a.last, e.ended);
      a.durations.push_back(static_cast<double>(e.duration_ms()) / 1000.0);
    }
    a.attempts += e.attempts;
    if (e.attempts > 1) ++a.retried;
    a.tokens += e.tokens;
    a.cost += e.cost;
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < per_shape.size(); ++i)
    if (per_shape[i].counts.total() > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto fa = per_shape[a].first, fb = per_shape[b].first;
    return (fa == 0 ? INT64_MAX : fa) < (fb == 0 ? INT64_MAX : fb);
  });
  json::array out;
  for (const auto i : order) {
    auto& a = per_shape[i];
    std::sort(a.durations.begin(), a.durations.end());
    double total = 0;
    for (const auto d : a.durations) total += d;
    json::object duration{{"total", total},
                          {"min", percentile(a.durations, 0)},
                          {"median", percentile(a.durations, 0.5)},
                          {"p90", percentile(a.durations, 0.9)},
                          {"max", percentile(a.durations, 1)}};
    out.push_back(json::object{{"step", shapes_[i].name},
                               {"type", a.type},
                               {"instances", a.counts.total()},
                               {"counts", a.counts.to_json()},
                               {"started_at", time_text(a.first)},
                               {"ended_at", time_text(a.last)},
                               {"duration", std::move(duration)},
                               {"attempts", a.attempts},
                               {"retried", a.retried},
                               {"tokens", a.tokens},
                               {"cost_usd", a.cost}});
  }
  return out;
}

json::array report_builder::loops_json() const {
  // Per loop instance: its items and how its iterations came out (their last records), so a
  // loop that is still going, or was killed, is counted as far as it got.
  std::map<std::string, status_counts> per_loop;
  for (const auto& [instance, e] : instances_)
    if (is_iteration(instance))
      if (const auto loop = enclosing_loop(instance)) per_loop[std::string(*loop)].add(e.status, e.cached);
  for (const auto& [loop, items] : loop_items_) per_loop.try_emplace(loop);
  // Live: iterations running now, per loop.
  std::map<std::string, std::size_t> running;
  if (live_)
    for (const auto* l : live_status_.loops()) running[l->id] = l->running.size();
  struct shape_total {
    std::size_t loops = 0, items = 0, running = 0;
    bool items_known = true;
    status_counts counts;
  };
  std::map<std::string, shape_total> per_shape;
  for (const auto& [loop, counts] : per_loop) {
    auto& t = per_shape[without_indices(loop)];
    ++t.loops;
    const auto items = loop_items_.find(loop);
    if (items != loop_items_.end())
      t.items += items->second;
    else
      t.items_known = false;  // a while loop still going: its count is not known yet
    for (int i = 0; i < 6; ++i) t.counts.by[i] += counts.by[i];
    t.counts.cached += counts.cached;
    if (const auto r = running.find(loop); r != running.end()) t.running += r->second;
  }
  json::array out;
  for (const auto& [shape, t] : per_shape) {
    auto counts = t.counts.to_json();
    counts["running"] = t.running;
    out.push_back(json::object{{"step", shape},
                               {"loops", t.loops},
                               {"items", t.items_known ? json::value(t.items) : json::value(nullptr)},
                               {"counts", std::move(counts)}});
  }
  return out;
}

json::object report_builder::timeline_json() const {
  // Leaves that ran, and those running now (their start from the events).
  struct span {
    const std::string* instance;
    std::int64_t start, end;
    std::string_view status;
    bool top;
  };
  std::vector<span> spans;
  std::int64_t first = INT64_MAX, last = 0;
  for (const auto& [instance, e] : instances_) {
    if (e.started <= 0 || e.ended < e.started) continue;
    first = std::min(first, e.started);
    last = std::max(last, e.ended);
    if (e.leaf && !e.cached) spans.push_back({&instance, e.started, e.ended, to_string(e.status), false});
  }
  const auto now = epoch_ms(now_);
  for (const auto& [instance, start] : open_starts_) {
    if (instances_.count(instance)) continue;  // ended in an earlier run
    first = std::min(first, start);
    last = std::max(last, live_ ? now : start);
    spans.push_back({&instance, start, live_ ? now : start, live_ ? "running" : "killed", false});
  }
  for (const auto& r : runs_) {
    if (r.started > 0) first = std::min(first, r.started);
    last = std::max(last, r.ended ? r.ended : (live_ ? now : r.started));
  }
  json::object out;
  if (first == INT64_MAX || last < first) {
    out["start"] = nullptr;
    out["end"] = nullptr;
    out["bin_seconds"] = 0;
    out["concurrency"] = json::array();
    out["ended"] = json::array();
    out["bars"] = json::array();
    out["steps"] = json::array();
    out["leaves"] = 0;
    out["max_concurrency"] = 0;
    return out;
  }
  const auto bins = std::max<std::size_t>(limits_.bins, 1);
  const double width = std::max(1.0, static_cast<double>(last - first) / static_cast<double>(bins));
  std::vector<double> busy(bins, 0);
  std::vector<std::size_t> completed(bins, 0), failed(bins, 0);
  std::vector<double> spent(bins, 0);
  const auto bin_of = [&](std::int64_t t) {
    return std::min(bins - 1, static_cast<std::size_t>(static_cast<double>(t - first) / width));
  };
  for (const auto& s : spans) {
    // Each leaf adds the part of every bin it covers: the mean of children running there.
    for (auto b = bin_of(s.start); b <= bin_of(s.end); ++b) {
      const double lo = static_cast<double>(first) + static_cast<double>(b) * width, hi = lo + width;
      const double overlap = std::min<double>(hi, static_cast<double>(s.end)) - std::max<double>(lo, static_cast<double>(s.start));
      if (overlap > 0) busy[b] += overlap / width;
      if (b == bins - 1) break;
    }
  }
  for (const auto& [instance, e] : instances_) {
    if (!e.leaf || e.ended <= 0) continue;
    const auto b = bin_of(e.ended);
    if (e.status == step_status::failed)
      ++failed[b];
    else if (e.status == step_status::completed)
      ++completed[b];
    spent[b] += e.cost;
  }
  // Peak concurrency: the most leaves running at one moment (starts and ends swept in order).
  std::vector<std::pair<std::int64_t, int>> edges;
  edges.reserve(spans.size() * 2);
  for (const auto& s : spans) {
    edges.emplace_back(s.start, 1);
    edges.emplace_back(s.end, -1);
  }
  std::sort(edges.begin(), edges.end());  // an end before a start at the same moment
  int running = 0, peak = 0;
  for (const auto& [t, d] : edges) peak = std::max(peak, running += d);

  // Bars: failures and the longest first, then shown in start order.
  std::vector<std::size_t> order(spans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto weight = [&](const span& s) { return s.status == "failed" || s.status == "running" ? 0 : 1; };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto &x = spans[a], &y = spans[b];
    if (weight(x) != weight(y)) return weight(x) < weight(y);
    if (x.end - x.start != y.end - y.start) return x.end - x.start > y.end - y.start;
    return *x.instance < *y.instance;
  });
  if (order.size() > limits_.bars) order.resize(limits_.bars);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return spans[a].start != spans[b].start ? spans[a].start < spans[b].start : *spans[a].instance < *spans[b].instance;
  });
  json::array bars;
  for (const auto i : order) {
    const auto& s = spans[i];
    bars.push_back(json::object{{"instance", *s.instance},
                                {"step", without_indices(*s.instance)},
                                {"start", static_cast<double>(s.start - first) / 1000.0},
                                {"end", static_cast<double>(s.end - first) / 1000.0},
                                {"status", s.status}});
  }
  // Top-level steps (no loop or sub-recipe around them): few, each a bar of its own.
  json::array steps;
  std::vector<std::pair<std::int64_t, std::string>> tops;
  for (const auto& [instance, e] : instances_)
    if (instance.find('/') == std::string::npos && !is_iteration(instance) && e.started > 0) tops.emplace_back(e.started, instance);
  std::sort(tops.begin(), tops.end());
  for (const auto& [start, instance] : tops) {
    const auto& e = instances_.at(instance);
    steps.push_back(json::object{{"step", instance},
                                 {"type", type_of(instance, e)},
                                 {"start", static_cast<double>(e.started - first) / 1000.0},
                                 {"end", static_cast<double>(e.ended - first) / 1000.0},
                                 {"status", to_string(e.status)}});
  }
  json::array concurrency, ended, spend;
  for (std::size_t b = 0; b < bins; ++b) {
    concurrency.push_back(std::round(busy[b] * 100) / 100);
    ended.push_back(json::array{completed[b], failed[b]});
    spend.push_back(spent[b]);
  }
  out["start"] = time_text(first);
  out["end"] = time_text(last);
  out["seconds"] = static_cast<double>(last - first) / 1000.0;
  out["bin_seconds"] = width / 1000.0;
  out["concurrency"] = std::move(concurrency);
  out["max_concurrency"] = peak;
  out["ended"] = std::move(ended);
  out["spend"] = std::move(spend);
  out["leaves"] = spans.size();
  out["bars"] = std::move(bars);
  out["steps"] = std::move(steps);
  return out;
}

json::object report_builder::failures_json() const {
  // Failed leaves, and containers that failed for a reason of their own (a loop whose items
  // are not a list): a container whose error repeats a failed leaf's is that failure again.
  std::vector<std::pair<std::uint64_t, const std::string*>> failed;
  for (const auto& [instance, e] : instances_)
    if (e.status == step_status::failed) failed.emplace_back(e.offset, &instance);
  std::sort(failed.begin(), failed.end());
  json::array shown;
  std::size_t total = 0;
  for (const auto& [offset, instance] : failed) {
    const auto& e = instances_.at(*instance);
    if (const auto origin = failure_origins_.find(*instance);
        origin != failure_origins_.end() && !origin->second.empty() && origin->second != *instance) {
      const auto o = instances_.find(origin->second);
      if (o != instances_.end() && o->second.status == step_status::failed) continue;
    }
    ++total;
    if (shown.size() >= limits_.failures) continue;
    const auto record = record_at(e);
    if (!record) continue;
    const auto& r = record->result;
    json::array excerpt;
    for (const auto& line : failure_excerpt(r.error)) excerpt.emplace_back(line);
    shown.push_back(json::object{
        {"instance", *instance},
        {"step", without_indices(*instance)},
        {"type", type_of(*instance, e)},
        {"error", one_line(r.error, 300)},
        {"excerpt", std::move(excerpt)},
        {"exit_code", r.exit_code ? json::value(*r.exit_code) : json::value(nullptr)},
        {"signal", r.signal ? json::value(*r.signal) : json::value(nullptr)},
        {"timed_out", r.timed_out},
        {"attempts", r.attempts},
        {"fatal", ended_run(*instance, e)},
        {"ended_at", time_text(e.ended)},
        {"duration", std::chrono::duration<double>(r.duration).count()},
        {"log", log_tail(session_, *instance, limits_.log_tail_bytes)}});
  }
  return json::object{{"total", total}, {"shown", std::move(shown)}};
}

json::object report_builder::usage_json() const {
  json::array by_model;
  agent_usage total;
  for (const auto& u : spend_.total()) {
    total.add(u);
    by_model.push_back(usage_to_json(u));
  }
  total.provider.clear();
  total.model.clear();
  json::array by_step;
  std::vector<std::pair<double, std::uint32_t>> costs;
  std::vector<std::uint64_t> tokens(shapes_.size(), 0), calls_per_shape(shapes_.size(), 0);
  std::vector<double> cost(shapes_.size(), 0);
  for (const auto& [instance, e] : instances_)
    if (e.leaf && (e.tokens > 0 || e.cost > 0)) {
      tokens[e.shape] += e.tokens;
      cost[e.shape] += e.cost;
      ++calls_per_shape[e.shape];
    }
  for (std::uint32_t i = 0; i < shapes_.size(); ++i)
    if (tokens[i] > 0 || cost[i] > 0) costs.emplace_back(cost[i], i);
  std::sort(costs.begin(), costs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [c, i] : costs)
    by_step.push_back(json::object{{"step", shapes_[i].name}, {"instances", calls_per_shape[i]}, {"tokens", tokens[i]}, {"cost_usd", c}});
  auto totals = usage_to_json(total);
  totals.erase("provider");
  totals.erase("model");
  return json::object{{"totals", std::move(totals)},
                      {"by_model", std::move(by_model)},
                      {"by_step", std::move(by_step)},
                      {"lost_lines", spend_.lost_lines().size()}};
}

json::object report_builder::gates_json(const json::object& state) const {
  json::array gates;
  std::set<std::string> seen;
  if (const auto* a = state.if_contains("approvals"); a && a->is_object()) {
    for (const auto& [gate, v] : a->get_object()) {
      if (!v.is_object()) continue;
      const auto& d = v.get_object();
      const std::string name(gate);
      seen.insert(name);
      const auto prompt = gate_prompts_.find(name);
      gates.push_back(json::object{
          {"gate", name},
          {"decision", string_or_null(d, "decision")},
          {"prompt", prompt != gate_prompts_.end() ? json::value(prompt->second) : json::value(nullptr)},
          {"message", string_or_null(d, "message")},
          {"by", string_or_null(d, "by")},
          {"requested_at", number_or_null(d, "requested_at")},
          {"decided_at", number_or_null(d, "decided_at")}});
    }
  }
  // Waiting gates a state.json without `approvals` (an older arun) still names.
  if (const auto* w = state.if_contains("waiting"); w && w->is_array())
    for (const auto& v : w->get_array()) {
      if (!v.is_object()) continue;
      const auto step = string_member(v.get_object(), "step");
      if (step.empty() || !seen.insert(step).second) continue;
      gates.push_back(json::object{{"gate", step},
                                   {"decision", "pending"},
                                   {"prompt", string_or_null(v.get_object(), "prompt")},
                                   {"message", nullptr},
                                   {"by", nullptr},
                                   {"requested_at", nullptr},
                                   {"decided_at", nullptr}});
    }
  json::array history;
  if (const auto* h = state.if_contains("approval_history"); h && h->is_array())
    for (const auto& entry : h->get_array())
      if (entry.is_object()) history.push_back(entry);
  return json::object{{"gates", std::move(gates)}, {"history", std::move(history)}};
}

json::object report_builder::isolation_json() const {
  std::vector<std::pair<std::uint64_t, const std::string*>> isolated;
  for (const auto& [instance, e] : instances_)
    if (e.isolated) isolated.emplace_back(e.offset, &instance);
  std::sort(isolated.begin(), isolated.end());
  const auto kept_paths = kept_session_trees(dir_);
  const std::set<std::string> kept(kept_paths.begin(), kept_paths.end());
  json::array listed;
  for (const auto& [offset, instance] : isolated) {
    if (listed.size() >= limits_.listed) break;
    const auto record = record_at(instances_.at(*instance));
    if (!record) continue;
    const auto& r = record->result;
    listed.push_back(json::object{{"instance", *instance},
                                  {"status", to_string(r.status)},
                                  {"branch", r.branch.empty() ? json::value(nullptr) : json::value(r.branch)},
                                  {"worktree", r.worktree.empty() ? json::value(nullptr) : json::value(r.worktree)},
                                  {"kept", kept.count(r.worktree) > 0}});
  }
  return json::object{{"total", isolated.size()}, {"kept", kept_paths.size()}, {"listed", std::move(listed)}};
}

json::object report_builder::cache_json() const {
  std::map<std::string, std::size_t> per_step;
  std::vector<std::pair<std::uint64_t, const std::string*>> hits;
  for (const auto& [instance, e] : instances_)
    if (e.cached) {
      ++per_step[shapes_[e.shape].name];
      hits.emplace_back(e.offset, &instance);
    }
  std::sort(hits.begin(), hits.end());
  json::array listed;
  for (const auto& [offset, instance] : hits) {
    if (listed.size() >= limits_.listed) break;
    listed.emplace_back(*instance);
  }
  json::object steps;
  for (const auto& [step, n] : per_step) steps[step] = n;
  return json::object{{"hits", hits.size()}, {"by_step", std::move(steps)}, {"listed", std::move(listed)}};
}

json::object report_builder::document(const json::object& state, const std::string& id) {
  auto doc = document_header();
  doc["generated_at"] = format_rfc3339_ms(now_);
  doc["session"] = session_json(state, id);
  doc["runs"] = runs_json(state);

  status_counts leaves;
  for (const auto& [instance, e] : instances_)
    if (e.leaf) leaves.add(e.status, e.cached);
  auto counts = leaves.to_json();
  std::size_t running = 0;
  for (const auto& [instance, start] : open_starts_)
    if (!instances_.count(instance)) ++running;
  counts["running"] = live_ ? running : 0;
  counts["killed"] = live_ ? 0 : running;  // started by a run that was killed before they ended
  // Gates waiting for a decision: no record yet (a gate is journaled when decided and run).
  std::size_t waiting = 0;
  if (const auto* w = state.if_contains("waiting"); w && w->is_array()) waiting = w->get_array().size();
  counts["waiting"] = waiting;
  doc["counts"] = std::move(counts);
  doc["instances"] = instances_.size();
  doc["steps"] = steps_json();
  doc["loops"] = loops_json();
  doc["timeline"] = timeline_json();
  doc["failures"] = failures_json();

  json::array reasons;
  std::vector<std::pair<std::size_t, const std::pair<std::string, std::string>*>> ranked;
  for (const auto& entry : retry_reasons_) ranked.emplace_back(entry.second, &entry.first);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [n, key] : ranked) {
    if (reasons.size() >= limits_.listed) break;
    reasons.push_back(json::object{{"step", key->first}, {"reason", key->second}, {"times", n}});
  }
  doc["retries"] = json::object{{"total", retries_}, {"by_reason", std::move(reasons)}, {"listed", retry_list_}};
  doc["cache"] = cache_json();
  doc["isolation"] = isolation_json();
  doc["gates"] = gates_json(state);
  doc["usage"] = usage_json();
  json::array calls = shown_failed_calls_;
  for (const auto& c : shown_calls_) {
    if (calls.size() >= limits_.transcripts) break;
    calls.push_back(c);
  }
  doc["transcripts"] = json::object{{"calls", calls_}, {"failed", failed_calls_}, {"listed", std::move(calls)}};
  doc["warnings"] = json::object{{"total", warning_count_}, {"listed", warnings_}};
  doc["limit_changes"] = json::object{{"total", limit_change_count_}, {"listed", limit_changes_}};
  json::array problems;
  for (const auto* p : {&journal_problem_, &events_problem_, &transcripts_problem_})
    if (!p->empty()) problems.emplace_back(*p);
  if (damaged_lines_ > 0)
    problems.emplace_back(std::to_string(damaged_lines_) + " journal line(s) do not read back (a crash can tear the last)");
  doc["problems"] = std::move(problems);
  return doc;
}

}  // namespace

std::variant<json::object, std::string> session_report(const std::string& root, const std::string& id,
                                                       sys_clock::time_point now, const report_limits& limits) {
  const auto dir = root + "/" + id;
  auto state = session_store::read_state(dir);
  if (auto* error = std::get_if<std::string>(&state)) return *error;
  auto opened = owned_dir::open(dir);
  if (auto* error = std::get_if<std::string>(&opened)) return *error;
  const auto& session = std::get<owned_dir>(opened);
  report_builder builder(session, dir, now, limits);
  // Whether a run holds the session, then its events, then the journal: an instance that
  // ends in between is in the journal, never missing from both.
  builder.read_events();
  builder.read_journal();
  builder.read_transcripts();
  return builder.document(std::get<json::object>(state), id);
}

}  // namespace arun::io
