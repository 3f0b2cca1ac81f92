#include "agents/agent_reply.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

namespace arun::io {
namespace {

namespace json = boost::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A JSON value, or null when `text` is not JSON. Claude's --verbose message arrays nest
// deeper than Boost.JSON's default of 32.
json::value parse_json(std::string_view text) {
  json::parse_options options;
  options.max_depth = 256;
  boost::system::error_code ec;
  auto v = json::parse(text, ec, {}, options);
  if (ec) return nullptr;
  return v;
}

std::string_view string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

bool type_member_is(const json::value& v, std::string_view type) {
  const auto* o = v.if_object();
  return o && string_at(*o, "type") == type;
}

// A token count: a non-negative integer (a whole double is taken too); else 0.
std::uint64_t count_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return 0;
  if (const auto* i = v->if_int64()) return *i > 0 ? static_cast<std::uint64_t>(*i) : 0;
  if (const auto* u = v->if_uint64()) return *u;
  if (const auto* d = v->if_double(); d && *d > 0 && *d < 1.8e19) return static_cast<std::uint64_t>(std::llround(*d));
  return 0;
}

// A dollar amount: a finite non-negative number; else none.
std::optional<double> dollars_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  if (!std::isfinite(d) || d < 0) return std::nullopt;
  return d;
}

std::string unreadable(const reply_context& c, std::string_view what, std::string_view reason) {
  return c.cli + "'s " + std::string(what) + " could not be read (" + std::string(reason) +
         "): the reply is taken as text and its usage is unknown";
}

constexpr std::string_view cut_reason = "it was cut at the capture limit; raise --max-output";

// Output that is not in the CLI's format: the text stays the reply, with a warning saying
// why (`what`: "JSON output"; `no_format`: why the whole output is not in it).
agent_reply raw_reply(std::string_view output, const reply_context& context, std::string_view what,
                      std::string_view no_format) {
  agent_reply reply;
  reply.text = std::string(output);
  reply.raw = true;
  reply.warning = unreadable(context, what,
                             context.cut               ? cut_reason
                             : trim(output).empty()    ? std::string_view("the output is empty")
                                                       : no_format);
  return reply;
}

// The result object of claude's output: the whole output as one object or a message array
// (--verbose), else the last line that is one.
const json::object* find_result(std::string_view output, json::value& holder) {
  holder = parse_json(trim(output));
  if (type_member_is(holder, "result")) return &holder.get_object();
  if (const auto* messages = holder.if_array()) {
    for (auto it = messages->rbegin(); it != messages->rend(); ++it)
      if (type_member_is(*it, "result")) return &it->get_object();
  }
  auto lines = split_lines(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto line = trim(*it);
    if (!line.starts_with('{')) continue;
    holder = parse_json(line);
    if (type_member_is(holder, "result")) return &holder.get_object();
  }
  return nullptr;
}

// The modelUsage key with the most output tokens (ties: the first); empty when none.
std::string main_model(const json::object& result) {
  const auto* models = result.if_contains("modelUsage");
  if (!models || !models->is_object()) return {};
  std::string best;
  std::uint64_t most = 0;
  bool any = false;
  for (const auto& [name, entry] : models->get_object()) {
    const auto* e = entry.if_object();
    const auto out = e ? count_at(*e, "outputTokens") : 0;
    if (!any || out > most) {
      best = std::string(name);
      most = out;
      any = true;
    }
  }
  return best;
}

// Claude's usage: its `usage` object, else the sum of its modelUsage entries; none when the
// result holds neither.
std::optional<agent_usage> claude_usage(const json::object& result, const reply_context& context) {
  agent_usage u;
  if (const auto* usage = result.if_contains("usage"); usage && usage->is_object()) {
    const auto& o = usage->get_object();
    u.input = count_at(o, "input_tokens");
    u.output = count_at(o, "output_tokens");
    u.cache_read = count_at(o, "cache_read_input_tokens");
    u.cache_write = count_at(o, "cache_creation_input_tokens");
  } else if (const auto* models = result.if_contains("modelUsage"); models && models->is_object()) {
    for (const auto& [name, entry] : models->get_object()) {
      const auto* e = entry.if_object();
      if (!e) continue;
      u.input += count_at(*e, "inputTokens");
      u.output += count_at(*e, "outputTokens");
      u.cache_read += count_at(*e, "cacheReadInputTokens");
      u.cache_write += count_at(*e, "cacheCreationInputTokens");
    }
  } else {
    return std::nullopt;
  }
  u.cost_usd = dollars_at(result, "total_cost_usd");
  u.model = main_model(result);
  if (u.model.empty()) u.model = context.model;
  return u;
}

void add_error(std::string& errors, std::string_view message) {
  message = trim(message);
  if (message.empty()) return;
  // codex repeats the last error event's message in turn.failed
  for (std::size_t at = 0; at <= errors.size();) {
    const auto end = std::min(errors.find("; ", at), errors.size());
    if (std::string_view(errors).substr(at, end - at) == message) return;
    at = end + 2;
  }
  if (!errors.empty()) errors += "; ";
  errors += message;
}

}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

bool reads_as_rate_limit(std::string_view message) {
  std::string lower(message);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("too many requests") != std::string::npos || lower.find("rate_limit") != std::string::npos ||
      lower.find("rate limit") != std::string::npos)
    return true;
  auto digit = [&](std::size_t i) { return i < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i])); };
  for (auto at = lower.find("429"); at != std::string::npos; at = lower.find("429", at + 1))
    if ((at == 0 || !digit(at - 1)) && !digit(at + 3)) return true;
  return false;
}

agent_reply decode_claude_json(std::string_view output, const reply_context& context) {
  agent_reply reply;
  json::value holder;
  const auto* result = find_result(output, holder);
  if (!result) return raw_reply(output, context, "JSON output", "no line of it is a JSON object of \"type\":\"result\"");
  reply.text = std::string(string_at(*result, "result"));
  reply.usage = claude_usage(*result, context);
  const auto* is_error = result->if_contains("is_error");
  reply.failed = is_error && is_error->is_bool() && is_error->get_bool();
  if (reply.failed) {
    reply.error = std::string(trim(reply.text));
    if (reply.error.empty()) reply.error = std::string(string_at(*result, "subtype"));
    if (reply.error.empty()) reply.error = "is_error without a message";
    const auto* status = result->if_contains("api_error_status");
    reply.rate_limited = (status && status->is_number() && status->to_number<double>() == 429) ||
                         reads_as_rate_limit(reply.error);
  }
  return reply;
}

agent_reply decode_codex_jsonl(std::string_view output, const reply_context& context) {
  agent_reply reply;
  bool events = false, message = false, turns = false;
  agent_usage usage;
  for (const auto raw : split_lines(output)) {
    const auto line = trim(raw);
    if (!line.starts_with('{')) continue;  // a banner, or a last line cut short
    const auto v = parse_json(line);
    const auto* e = v.if_object();
    const auto type = e ? string_at(*e, "type") : std::string_view();
    if (type.empty()) continue;
    events = true;
    if (type == "item.completed") {
      const auto* item = e->if_contains("item");
      if (item && type_member_is(*item, "agent_message")) {
        reply.text = std::string(string_at(item->get_object(), "text"));
        message = true;
      }
    } else if (type == "turn.completed") {
      turns = true;
      reply.failed = false;
      if (const auto* u = e->if_contains("usage"); u && u->is_object()) {
        const auto& o = u->get_object();
        const auto input = count_at(o, "input_tokens"), cached = count_at(o, "cached_input_tokens");
        // codex counts cached tokens as part of its input; arun's input excludes them.
        usage.input += input > cached ? input - cached : 0;
        usage.cache_read += cached;
        usage.output += count_at(o, "output_tokens");
      }
    } else if (type == "turn.failed") {
      reply.failed = true;
      const auto* error = e->if_contains("error");
      add_error(reply.error, error && error->is_object() ? string_at(error->get_object(), "message") : "turn failed");
    } else if (type == "error") {
      add_error(reply.error, string_at(*e, "message"));
    }
  }
  if (reply.failed && reply.error.empty()) reply.error = "turn failed";
  reply.rate_limited = reads_as_rate_limit(reply.error);
  if (!events || (context.cut && !message)) return raw_reply(output, context, "JSON events", "no line of it is a JSON event");
  if (context.cut) {
    // The turns after the cut are unknown: a partial count would read as the whole.
    reply.warning = context.cli + "'s JSON events were cut at the capture limit (raise --max-output): the reply is "
                    "the last agent message before the cut and its usage is unknown";
    return reply;
  }
  if (turns) {
    usage.model = context.model;
    reply.usage = usage;
  }
  return reply;
}

agent_reply decode_reply(reply_format format, std::string_view output, const reply_context& context) {
  switch (format) {
    case reply_format::claude_json: return decode_claude_json(output, context);
    case reply_format::codex_jsonl: return decode_codex_jsonl(output, context);
    case reply_format::text: break;
  }
  agent_reply reply;
  reply.text = std::string(output);
  reply.raw = true;
  return reply;
}

std::vector<shown_line> reply_line_filter::on_stdout_line(std::string_view line, bool cut) {
  std::vector<shown_line> shown;
  if (format_ == reply_format::text) {
    shown.push_back({output_stream::out, std::string(line), cut});
    return shown;
  }
  if (format_ == reply_format::claude_json) return shown;  // the reply is shown when it ends
  const auto t = trim(line);
  if (!t.starts_with('{')) {
    shown.push_back({output_stream::out, std::string(line), cut});
    return shown;
  }
  if (cut) {
    missed_ = true;  // an event too long to read here: the reply is shown at the end
    return shown;
  }
  const auto v = parse_json(t);
  const auto* e = v.if_object();
  const auto type = e ? string_at(*e, "type") : std::string_view();
  if (type.empty()) {
    shown.push_back({output_stream::out, std::string(line), cut});
    return shown;
  }
  std::string_view text;
  auto stream = output_stream::out;
  if (type == "item.completed") {
    const auto* item = e->if_contains("item");
    if (item && type_member_is(*item, "agent_message")) text = string_at(item->get_object(), "text");
  } else if (type == "error" || type == "turn.failed") {
    const auto* error = type == "error" ? e : e->if_contains("error") ? e->at("error").if_object() : nullptr;
    text = error ? string_at(*error, "message") : std::string_view();
    stream = output_stream::err;
    if (text == last_error_) return shown;  // codex repeats the error event's message in turn.failed
    last_error_ = std::string(text);
  }
  for (const auto l : split_lines(text)) shown.push_back({stream, std::string(l), false});
  return shown;
}

}  // namespace arun::io
