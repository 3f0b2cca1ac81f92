#include "session/transcripts.hpp"

#include "files/json_text.hpp"
#include "files/private_files.hpp"
#include "output/event_json.hpp"
#include "output/result_format.hpp"
#include "output/value_summary.hpp"
#include "session/instance_logs.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace arun::io {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr std::string_view log_suffix = ".out";

// `text` cut at `max_bytes` (on a character boundary), with a note of what was left out.
std::string bounded(std::string_view text, std::size_t max_bytes, bool& cut) {
  if (text.size() <= max_bytes) return std::string(text);
  cut = true;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a character
  return std::string(text.substr(0, end)) + fmt::format("\n[… {} more bytes: cut at --max-output]", text.size() - end);
}

json::value text_or_null(const std::optional<int>& v) { return v ? json::value(*v) : json::value(nullptr); }

std::string text_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::optional<agent_call_record> call_from_json(const json::object& o) {
  agent_call_record c;
  c.instance = text_of(o, "instance");
  if (c.instance.empty()) return std::nullopt;
  c.started = parse_rfc3339_ms(text_of(o, "started_at")).value_or(std::chrono::system_clock::time_point{});
  c.ended = parse_rfc3339_ms(text_of(o, "ended_at")).value_or(std::chrono::system_clock::time_point{});
  if (const auto* argv = o.if_contains("argv"); argv && argv->is_array())
    for (const auto& a : argv->get_array())
      if (a.is_string()) c.argv.emplace_back(a.get_string());
  c.model = text_of(o, "model");
  c.system_prompt = text_of(o, "system_prompt");
  c.prompt = text_of(o, "prompt");
  c.reply = text_of(o, "reply");
  c.error = text_of(o, "error");
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

std::string transcript_path(std::string_view instance) {
  auto path = instance_log_path(instance, output_stream::out);
  path.resize(path.size() - log_suffix.size());
  return path + ".jsonl";
}

transcript_store::transcript_store(std::string dir, std::size_t max_bytes, std::shared_ptr<background_writer> writer,
                                   const secret_masker* masker)
    : dir_(std::move(dir)), max_bytes_(std::max<std::size_t>(max_bytes, 1024)), writer_(std::move(writer)),
      masker_(masker) {}

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
    o["exit_code"] = text_or_null(call.exit_code);
    o["error"] = text(call.error);
    o["usage"] = call.usage ? json::value(usage_to_json(*call.usage)) : json::value(nullptr);
    o["cut"] = cut;
    json::value record = std::move(o);
    if (masker_) masker_->mask_json(record);
    auto line = to_json_text(record) + "\n";
    const auto path = dir_ + "/" + transcript_path(call.instance);
    writer_->post(line.size(), [path, line = std::move(line), error = error_] {
      std::error_code ec;
      const auto parent = fs::path(path).parent_path().string();
      std::string why;
      if (!make_private_directories(parent, ec)) {
        why = ec.message();
      } else {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0) {
          why = std::strerror(errno);
        } else {
          // One write: a line is whole or absent, even when two runs share a session by mistake.
          const auto written = ::write(fd, line.data(), line.size());
          if (written != static_cast<ssize_t>(line.size())) why = written < 0 ? std::strerror(errno) : "short write";
          ::close(fd);
        }
      }
      if (why.empty()) return;
      std::lock_guard lock(error->mutex);
      if (error->text.empty()) error->text = "cannot write transcript '" + path + "': " + why;
    });
  } catch (...) {
    std::lock_guard lock(error_->mutex);
    if (error_->text.empty()) error_->text = "cannot record a transcript of '" + call.instance + "'";
  }
}

std::string transcript_store::error() const {
  std::lock_guard lock(error_->mutex);
  return error_->text;
}

std::vector<instance_transcript> read_transcripts(const std::string& session_dir, std::string& why) {
  std::vector<instance_transcript> out;
  const fs::path root = fs::path(session_dir) / "transcripts";
  std::error_code ec;
  if (!fs::exists(root, ec)) return out;
  fs::recursive_directory_iterator it(root, ec), end;
  if (ec) {
    why = "cannot read " + root.string() + ": " + ec.message();
    return out;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      why = "cannot read " + root.string() + ": " + ec.message();
      break;
    }
    if (!it->is_regular_file(ec) || it->path().extension() != ".jsonl") continue;
    std::ifstream in(it->path());
    instance_transcript t;
    for (std::string line; std::getline(in, line);) {
      boost::system::error_code parse_error;
      const auto v = parse_json_text(line, parse_error);
      if (parse_error || !v.is_object()) continue;  // a line cut by a crash: the others stand
      if (auto call = call_from_json(v.get_object())) {
        if (t.instance.empty()) t.instance = call->instance;
        t.calls.push_back(std::move(*call));
      }
    }
    if (!t.calls.empty()) out.push_back(std::move(t));
  }
  return out;
}

std::string transcript_to_text(const instance_transcript& t) {
  std::string text;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    const auto& c = t.calls[i];
    std::string how = c.error.empty() ? "ok" : "failed: " + c.error;
    if (c.exit_code) how += fmt::format(", exit {}", *c.exit_code);
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
