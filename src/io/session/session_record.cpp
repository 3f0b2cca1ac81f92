#include "session/session_record.hpp"

#include "output/event_json.hpp"
#include "files/json_text.hpp"
#include "output/result_format.hpp"
#include "session/journal_references.hpp"
#include "files/owned_tree.hpp"

#include <arun/value_format.hpp>

#include <boost/crc.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <limits>
#include <cstdio>
#include <utility>
#include <variant>
#include <stdexcept>

namespace arun::io {
namespace {

namespace json = boost::json;

// A damaged journal may hold any number: one outside the type's range is not a value of it
// (converting it would be undefined behaviour).
std::optional<int> optional_int(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  if (!(d >= std::numeric_limits<int>::min() && d <= std::numeric_limits<int>::max())) return std::nullopt;
  return static_cast<int>(d);
}

std::size_t count(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_number()) return 0;
  const double d = v->to_number<double>();
  // 2^53: every count below it is exact in a double, and far beyond any real count.
  return d >= 0 && d < 9007199254740992.0 ? static_cast<std::size_t>(d) : 0;
}

}  // namespace

std::optional<step_status> status_from(std::string_view text) {
  for (auto s : {step_status::completed, step_status::failed, step_status::skipped, step_status::degraded,
                 step_status::cancelled, step_status::not_run})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

json::object journal_record(const step_result& result, const json::object& context_delta) {
  json::object o;
  o["instance"] = result.step_id;
  o["status"] = to_string(result.status);
  o["fatal"] = result.fatal;
  if (result.skipped_rest) o["skip_remaining"] = true;
  o["result"] = step_to_json(result);
  // A sub-recipe step keeps its own steps one level deep: theirs are in their own records
  // (written before this one), so the journal grows with the instances, not with their depth.
  if (auto* children = o["result"].as_object().if_contains("children"))
    for (auto& child : children->as_array()) child.as_object().erase("children");
  o["delta"] = context_delta;
  if (!result.content_key.empty()) o["key"] = result.content_key;  // resume --reload compares it
  // Stored outputs are listed beside the values, never held in them (journal_references.hpp).
  if (auto stored = take_references(o); !stored.empty()) o["stored_outputs"] = std::move(stored);
  return o;
}

step_result step_from_json(const json::object& o) {
  step_result r;
  if (const auto* id = o.if_contains("step_id"); id && id->is_string()) r.step_id = id->get_string();
  if (const auto* st = o.if_contains("status"); st && st->is_string())
    r.status = status_from(st->get_string()).value_or(step_status::not_run);
  if (const auto* out = o.if_contains("output")) r.output = *out;
  if (const auto* e = o.if_contains("error"); e && e->is_string()) r.error = e->get_string();
  if (const auto* d = o.if_contains("duration"); d && d->is_number())
    r.duration = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(d->to_number<double>() * 1e9)));
  if (const auto* q = o.if_contains("queued"); q && q->is_number())
    r.queued = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(q->to_number<double>() * 1e9)));
  for (auto [key, field] : {std::pair{"started_at", &r.started_at}, std::pair{"ended_at", &r.ended_at}})
    if (const auto* t = o.if_contains(key); t && t->is_string())
      *field = parse_rfc3339_ms(t->get_string()).value_or(std::chrono::system_clock::time_point{});
  r.attempts = optional_int(o, "attempts").value_or(0);
  r.exit_code = optional_int(o, "exit_code");
  r.signal = optional_int(o, "signal");
  if (const auto* t = o.if_contains("timed_out"); t && t->is_bool()) r.timed_out = t->get_bool();
  if (const auto* t = o.if_contains("truncated"); t && t->is_bool()) r.truncated = t->get_bool();
  if (const auto* it = o.if_contains("iterations"); it && it->is_object()) {
    const auto& i = it->get_object();
    r.iterations = iteration_counts{count(i, "total"),   count(i, "completed"), count(i, "failed"), count(i, "skipped"),
                                    count(i, "waiting"), count(i, "cancelled"), count(i, "not_run"),
                                    count(i, "cached")};
  }
  if (const auto* failed = o.if_contains("failed_instances"); failed && failed->is_array())
    for (const auto& f : failed->get_array())
      if (const auto* entry = f.if_object()) {
        const auto* instance = entry->if_contains("instance");
        const auto* error = entry->if_contains("error");
        if (instance && instance->is_string())
          r.failed_instances.push_back(
              {std::string(instance->get_string()), error && error->is_string() ? std::string(error->get_string()) : ""});
      }
  if (const auto* c = o.if_contains("cached"); c && c->is_bool()) r.cached = c->get_bool();
  if (const auto* w = o.if_contains("worktree"); w && w->is_string()) r.worktree = w->get_string();
  if (const auto* b = o.if_contains("branch"); b && b->is_string()) r.branch = b->get_string();
  if (const auto* usage = o.if_contains("usage")) r.usage = usage_from_json(*usage);
  if (const auto* children = o.if_contains("children"); children && children->is_array())
    for (const auto& c : children->get_array())
      if (c.is_object()) r.children.push_back(step_from_json(c.get_object()));
  return r;
}

namespace {

constexpr std::string_view crc_member = ",\"crc\":\"";

std::string crc_hex(std::string_view text) {
  boost::crc_32_type crc;
  crc.process_bytes(text.data(), text.size());
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc.checksum());
  return hex;
}

// The line's text without its checksum member, and the checksum; none without one.
std::optional<std::pair<std::string, std::string_view>> split_checksum(std::string_view line) {
  const auto at = line.rfind(crc_member);
  if (at == std::string_view::npos || !line.ends_with("\"}")) return std::nullopt;
  const auto digits = line.substr(at + crc_member.size(), line.size() - 2 - at - crc_member.size());
  return std::pair{std::string(line.substr(0, at)) + "}", digits};
}

// `record`'s line: its compact JSON with the checksum member last, and a newline.
std::string checksummed_line(json::value record, const secret_masker* masker) {
  if (masker) masker->mask_json(record);
  auto text = to_json_text(record);
  const auto crc = crc_hex(text);
  text.pop_back();  // the closing brace: the checksum goes last
  return text + std::string(crc_member) + crc + "\"}\n";
}

}  // namespace

std::string journal_line(const step_result& result, const json::object& context_delta, const secret_masker* masker) {
  return checksummed_line(journal_record(result, context_delta), masker);
}

std::string usage_line(std::string_view instance, const agent_usage& call, const secret_masker* masker) {
  return checksummed_line(json::object{{"call_of", instance}, {"usage", usage_to_json(call)}}, masker);
}

bool is_usage_line(std::string_view line) { return line.find("\"call_of\"") != std::string_view::npos; }

std::optional<call_usage> parse_usage_line(std::string_view line) {
  if (!is_usage_line(line) || checksum_mismatch(line)) return std::nullopt;
  boost::system::error_code ec;
  const auto v = parse_json_text(line, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  const auto* of = o.if_contains("call_of");
  const auto* usage = o.if_contains("usage");
  if (!of || !of->is_string() || !usage || o.contains("instance")) return std::nullopt;
  auto read = usage_from_json(*usage);
  if (!read) return std::nullopt;
  return call_usage{std::string(of->get_string()), std::move(*read)};
}

bool checksum_mismatch(std::string_view line) {
  const auto parts = split_checksum(line);
  return parts && crc_hex(parts->first) != parts->second;
}

std::optional<finished_instance> parse_journal_line(std::string_view line) {
  if (checksum_mismatch(line)) return std::nullopt;
  boost::system::error_code ec;
  auto v = parse_json_text(line, ec);
  if (ec || !v.is_object()) return std::nullopt;
  auto& o = v.get_object();
  if (const auto* stored = o.if_contains("stored_outputs")) {
    const json::value entries = *stored;
    restore_references(o, entries);
  }
  const auto* result = o.if_contains("result");
  const auto* instance = o.if_contains("instance");
  if (!result || !result->is_object() || !instance || !instance->is_string()) return std::nullopt;
  finished_instance f;
  f.result = step_from_json(result->get_object());
  f.result.step_id = instance->get_string();
  if (const auto* fatal = o.if_contains("fatal"); fatal && fatal->is_bool()) f.result.fatal = fatal->get_bool();
  if (const auto* skip = o.if_contains("skip_remaining"); skip && skip->is_bool()) f.result.skipped_rest = skip->get_bool();
  if (const auto* delta = o.if_contains("delta"); delta && delta->is_object()) f.context_delta = delta->get_object();
  if (const auto* key = o.if_contains("key"); key && key->is_string()) f.result.content_key = key->get_string();
  return f;
}

std::vector<failed_instance> failed_in_journal(std::string_view journal) {
  // By instance, with when it (last) failed: a later record of the same instance wins.
  std::map<std::string, std::pair<std::size_t, std::string>, std::less<>> failed;
  for (std::size_t seq = 0; !journal.empty(); ++seq) {
    const auto end = journal.find('\n');
    if (end == std::string_view::npos) break;
    if (const auto record = parse_journal_line(journal.substr(0, end))) {
      const auto& r = record->result;
      if (r.status == step_status::failed)
        failed.insert_or_assign(r.step_id, std::pair{seq, r.error.substr(0, r.error.find('\n'))});
      else
        failed.erase(r.step_id);
    }
    journal.remove_prefix(end + 1);
  }
  std::vector<std::pair<std::size_t, failed_instance>> ordered;
  for (auto& [instance, at] : failed) ordered.push_back({at.first, failed_instance{instance, std::move(at.second)}});
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<failed_instance> out;
  for (auto& entry : ordered) out.push_back(std::move(entry.second));
  return out;
}

std::vector<failed_instance> failed_in_session(const std::string& session_dir) {
  std::string why_not;
  auto session = owned_dir::open(session_dir);
  const auto* dir = std::get_if<owned_dir>(&session);
  const auto journal = dir ? dir->read_file("journal.jsonl", std::size_t{1} << 30, why_not) : std::nullopt;
  return failed_in_journal(journal ? std::string_view(*journal) : std::string_view());
}

}  // namespace arun::io
