#include "output/jsonl_sink.hpp"

#include "output/event_json.hpp"
#include "files/fd_write.hpp"
#include "files/output_file.hpp"
#include "files/private_files.hpp"

#include <arun/value_format.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace arun::io {

jsonl_open_result jsonl_event_sink::open(const std::string& path, bool truncate, event_output_limits limits,
                                         std::shared_ptr<background_writer> writer) {
  jsonl_open_result r;
  // A FIFO never holds arun: neither its open nor, at a stop, its writes (output_file.hpp).
  const auto opened = open_output_file(path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0) | O_APPEND | O_CLOEXEC, 0600);
  const int fd = opened.fd;
  if (fd < 0) {
    r.error = "cannot open events file '" + path + "': " + output_file_error(opened.error);
    return r;
  }
  r.sink.reset(new jsonl_event_sink(fd, path, limits, std::move(writer)));
  return r;
}

jsonl_open_result jsonl_event_sink::open_audit(const std::string& dir, const std::string& recipe_name,
                                               const std::string& session_id,
                                               std::shared_ptr<background_writer> writer) {
  std::error_code ec;
  make_private_directories(dir, ec);
  if (ec) {
    jsonl_open_result r;
    r.error = "cannot create audit directory '" + dir + "': " + ec.message();
    return r;
  }
  // Appended: a resumed session writes to the same file (its id is the session's).
  return open(audit_file_path(dir, recipe_name, session_id), false, {}, std::move(writer));
}

jsonl_event_sink::~jsonl_event_sink() {
  if (writer_) writer_->drain();  // queued lines refer to this sink
  ::close(fd_);
}

std::string jsonl_event_sink::error() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

void jsonl_event_sink::on_event(const event& e) noexcept {
  if (failed_) return;
  try {
    if (e.kind == event_kind::step_output) {
      // Masked before it is cut (a cut through a secret would leave its beginning).
      if (masker_ && !masker_->clean(e.line)) {
        const auto masked = masker_->mask(e.line);
        auto copy = e;
        copy.line = masked;
        if (const auto kept = bounded_output(copy)) write_event(*kept);
        return;
      }
      if (const auto kept = bounded_output(e)) write_event(*kept);
      return;
    }
    if (e.kind == event_kind::step_end) report_omitted(e);
  } catch (...) {
    fail(ENOMEM);  // only allocation can fail above
    return;
  }
  write_event(e);
}

std::optional<event> jsonl_event_sink::bounded_output(const event& e) {
  auto& used = output_[e.step];
  const auto size = std::min(e.line.size(), limits_.max_line_bytes);
  if (used.lines >= limits_.max_lines || used.bytes + size > limits_.max_bytes) {
    ++used.omitted_lines;
    used.omitted_bytes += e.line.size();
    return std::nullopt;
  }
  ++used.lines;
  used.bytes += size;
  event kept = e;
  if (e.line.size() > size) {
    kept.line = e.line.substr(0, size);
    kept.line_truncated = true;
  }
  return kept;
}

// Once per instance, at its end: the output left out, counted (the step's result keeps its
// output up to --max-output either way).
void jsonl_event_sink::report_omitted(const event& end) {
  const auto it = output_.find(end.step);
  if (it == output_.end()) return;
  const auto used = it->second;
  output_.erase(it);
  if (used.omitted_lines == 0) return;
  event note;
  note.kind = event_kind::warning;
  note.ts = end.ts;
  note.session_id = end.session_id;
  note.step = end.step;
  note.step_type = end.step_type;
  note.message = std::to_string(used.omitted_lines) + " output lines (" + std::to_string(used.omitted_bytes) +
                 " bytes) left out of the events: past " + std::to_string(limits_.max_lines) + " lines or " +
                 std::to_string(limits_.max_bytes) + " bytes per step";
  write_event(note);
}

void jsonl_event_sink::write_event(const event& e) noexcept {
  if (failed_) return;
  try {
    boost::json::value object = event_to_json(e);
    if (masker_) masker_->mask_json(object);
    std::string line = to_compact_json(object);
    line += '\n';
    if (!writer_) return write_line(line);
    const auto size = line.size();
    writer_->post(size, [this, line = std::move(line)] { write_line(line); });
  } catch (...) {
    fail(ENOMEM);  // only allocation can fail above
  }
}

void jsonl_event_sink::write_line(const std::string& line) noexcept {
  if (failed_) return;  // a line after a partial one would corrupt the file
  if (const int err = write_all(fd_, line); err != 0)
    fail(err);
  else
    ++lines_;
}

void jsonl_event_sink::fail(int err) noexcept {
  std::lock_guard lock(error_mutex_);
  if (failed_.exchange(true)) return;  // the first error is the one to report
  try {
    error_ = "cannot write events file '" + path_ + "': " +
             (err == ECANCELED ? std::string("its reader stopped reading, and arun stopped waiting for it")
                               : std::string(std::strerror(err)));
  } catch (...) {
    // error_ stays empty; failed_ still stops further writes.
  }
}


std::string audit_file_path(const std::string& dir, const std::string& recipe_name, const std::string& session_id) {
  std::string name = file_name_part(recipe_name);
  if (name.empty()) name = "recipe";
  return (std::filesystem::path(dir) / (name + "-" + file_name_part(session_id) + ".jsonl")).string();
}

}  // namespace arun::io
