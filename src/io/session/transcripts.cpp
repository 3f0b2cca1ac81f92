#include "session/transcripts.hpp"

#include "files/text_lines.hpp"

#include "files/json_text.hpp"
#include "output/event_json.hpp"
#include "output/result_format.hpp"
#include "output/value_summary.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

namespace arun::io {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// `text` cut at `max_bytes` (on a character boundary), with a note of what was left out.
std::string bounded(std::string_view text, std::size_t max_bytes, bool& cut) {
  if (text.size() <= max_bytes) return std::string(text);
  cut = true;
  const auto end = character_boundary(text, max_bytes);
  return std::string(text.substr(0, end)) + fmt::format("\n[… {} more bytes: cut at --max-output]", text.size() - end);
}

json::value number_or_null(const std::optional<int>& v) { return v ? json::value(*v) : json::value(nullptr); }

std::optional<agent_call_record> call_from_json(const json::object& o) {
  agent_call_record c;
  c.instance = string_member(o, "instance");
  if (c.instance.empty()) return std::nullopt;
  c.started = parse_rfc3339_ms(string_member(o, "started_at")).value_or(std::chrono::system_clock::time_point{});
  c.ended = parse_rfc3339_ms(string_member(o, "ended_at")).value_or(std::chrono::system_clock::time_point{});
  if (const auto* argv = o.if_contains("argv"); argv && argv->is_array())
    for (const auto& a : argv->get_array())
      if (a.is_string()) c.argv.emplace_back(a.get_string());
  c.model = string_member(o, "model");
  c.system_prompt = string_member(o, "system_prompt");
  c.prompt = string_member(o, "prompt");
  c.reply = string_member(o, "reply");
  c.error = string_member(o, "error");
  if (const auto* e = o.if_contains("exit_code"); e && e->is_int64()) c.exit_code = static_cast<int>(e->get_int64());
  if (const auto* u = o.if_contains("usage")) c.usage = usage_from_json(*u);
  if (const auto* cut = o.if_contains("cut"); cut && cut->is_bool()) c.cut = cut->get_bool();
  return c;
}

// One word of an argv as a shell would need it: quoted when it holds anything special.
std::string shell_word(std::string_view w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                        std::string_view::npos)
    return std::string(w);
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void append_section(std::string& text, std::string_view heading, std::string_view body) {
  text += fmt::format("### {}\n", heading);
  text += body;
  if (!body.empty() && body.back() != '\n') text += '\n';
  if (body.empty()) text += "(empty)\n";
}

}  // namespace

std::string transcripts_file(const std::string& session_dir) { return session_dir + "/transcripts.jsonl"; }

std::optional<agent_call_record> parse_transcript_line(std::string_view line) {
  boost::system::error_code parse_error;
  const auto v = parse_json_text(line, parse_error);
  if (parse_error || !v.is_object()) return std::nullopt;  // a line cut by a crash: the others stand
  return call_from_json(v.get_object());
}

struct transcript_store::open_file {
  std::string path;
  int fd = -1;
  std::mutex mutex;  // guards `error`: the writer's thread sets it, the run reads it
  std::string error;

  ~open_file() {
    if (fd >= 0) ::close(fd);
  }
  void fail(std::string why) {
    std::lock_guard lock(mutex);
    if (error.empty()) error = "cannot write transcript '" + path + "': " + why;
  }
};

transcript_store::transcript_store(std::string path, std::size_t max_bytes, std::shared_ptr<background_writer> writer,
                                   const secret_masker* masker)
    : max_bytes_(std::max<std::size_t>(max_bytes, 1024)), writer_(std::move(writer)), masker_(masker),
      file_(std::make_shared<open_file>()) {
  file_->path = std::move(path);
}

void transcript_store::record(const agent_call_record& call) noexcept {
  try {
    bool cut = call.cut;
    // Masked before it is cut: a cut through a secret would leave its beginning.
    auto text = [&](std::string_view t) {
      return sanitize_utf8(bounded(masker_ ? masker_->mask(t) : std::string(t), max_bytes_, cut));
    };
    json::object o;
    o["instance"] = call.instance;
    o["started_at"] = format_rfc3339_ms(call.started);
    o["ended_at"] = format_rfc3339_ms(call.ended);
    json::array argv;
    for (const auto& a : call.argv) argv.emplace_back(text(a));
    o["argv"] = std::move(argv);
    o["model"] = call.model;
    o["system_prompt"] = text(call.system_prompt);
    o["prompt"] = text(call.prompt);
    o["reply"] = text(call.reply);
    o["exit_code"] = number_or_null(call.exit_code);
    o["error"] = text(call.error);
    o["usage"] = call.usage ? json::value(usage_to_json(*call.usage)) : json::value(nullptr);
    o["cut"] = cut;
    json::value record = std::move(o);
    if (masker_) masker_->mask_json(record);
    auto line = to_json_text(record) + "\n";
    writer_->post(line.size(), [file = file_, line = std::move(line)] {
      if (file->fd < 0) {
        file->fd = ::open(file->path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (file->fd < 0) return file->fail(std::strerror(errno));
      }
      // One write: a line is whole or absent, even when two runs share a session by mistake.
      const auto written = ::write(file->fd, line.data(), line.size());
      if (written != static_cast<ssize_t>(line.size())) file->fail(written < 0 ? std::strerror(errno) : "short write");
    });
  } catch (...) {
    file_->fail("cannot record the call of '" + call.instance + "': out of memory");
  }
}

std::string transcript_store::error() const {
  std::lock_guard lock(file_->mutex);
  return file_->error;
}

std::vector<instance_transcript> read_transcripts(const std::string& session_dir, std::string& why) {
  std::vector<instance_transcript> out;
  const auto path = transcripts_file(session_dir);
  std::ifstream in(path);
  if (!in) {
    std::error_code ec;
    if (fs::exists(path, ec)) why = "cannot read " + path + ": " + std::strerror(errno);
    return out;
  }
  std::unordered_map<std::string, std::size_t> index;  // instance -> its place in `out`
  for (std::string line; std::getline(in, line);) {
    auto call = parse_transcript_line(line);
    if (!call) continue;
    auto [it, added] = index.try_emplace(call->instance, out.size());
    if (added) out.push_back({call->instance, {}});
    out[it->second].calls.push_back(std::move(*call));
  }
  return out;
}

std::string transcript_to_text(const instance_transcript& t) {
  std::string text;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    const auto& c = t.calls[i];
    std::string how = c.error.empty() ? "ok" : "failed: " + c.error;
    // The exit code once: an error that says it already ("exit code 1") is not followed by "exit 1".
    if (c.exit_code && c.error.find(fmt::format("exit code {}", *c.exit_code)) == std::string::npos)
      how += fmt::format(", exit {}", *c.exit_code);
    const auto seconds = std::chrono::duration<double>(c.ended - c.started).count();
    text += fmt::format("== {} · call {} of {} · {} · {:.1f}s · {}\n", t.instance, i + 1, t.calls.size(),
                        format_rfc3339_ms(c.started), seconds, how);
    if (c.usage) {
      const auto& u = *c.usage;
      text += fmt::format("usage: {} {}: {} in, {} out, {} cache read, {} cache write, {}\n", u.provider,
                          u.model.empty() ? "(model unknown)" : u.model, thousands(u.input), thousands(u.output),
                          thousands(u.cache_read), thousands(u.cache_write),
                          u.cost_usd ? fmt::format("${:.4f}", *u.cost_usd) : std::string("cost unknown"));
    }
    std::string command;
    for (const auto& a : c.argv) command += (command.empty() ? "" : " ") + shell_word(a);
    text += "$ " + command + "\n";
    if (!c.model.empty()) text += "model: " + c.model + "\n";
    if (!c.system_prompt.empty()) append_section(text, "system prompt", c.system_prompt);
    append_section(text, "prompt", c.prompt);
    append_section(text, "reply", c.reply);
    if (c.cut) text += "(texts cut at --max-output)\n";
    text += "\n";
  }
  return text;
}

}  // namespace arun::io
