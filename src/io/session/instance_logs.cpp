#include "session/instance_logs.hpp"

#include "files/fd_write.hpp"
#include "files/owned_tree.hpp"
#include "files/private_files.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

namespace arun::io {
namespace {

constexpr std::size_t hand_over_bytes = 16 * 1024;
constexpr std::string_view hooks_suffix = "@hooks";

bool id_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '[' || c == ']';
}

void encode_component(std::string_view part, std::string& out) {
  const bool dots = part.empty() || part == "." || part == "..";
  for (const char c : part) {
    if (id_byte(c) && !(dots && c == '.'))
      out += c;
    else
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex_digit_value(text[i + 1]), lo = hex_digit_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

std::string instance_log_path(std::string_view instance, output_stream stream, bool hooks) {
  std::string out;
  while (true) {
    const auto slash = instance.find('/');
    encode_component(instance.substr(0, slash), out);
    if (slash == std::string_view::npos) break;
    out += '/';
    instance.remove_prefix(slash + 1);
  }
  if (hooks) out += hooks_suffix;
  out += stream == output_stream::out ? ".out" : ".err";
  return out;
}

std::optional<instance_log_name> parse_instance_log_path(std::string_view relative) {
  instance_log_name name;
  if (relative.ends_with(".1")) {
    name.rotated = true;
    relative.remove_suffix(2);
  }
  if (relative.ends_with(".out"))
    name.stream = output_stream::out;
  else if (relative.ends_with(".err"))
    name.stream = output_stream::err;
  else
    return std::nullopt;
  relative.remove_suffix(4);
  if (relative.ends_with(hooks_suffix)) {
    name.hooks = true;
    relative.remove_suffix(hooks_suffix.size());
  }
  if (relative.empty()) return std::nullopt;
  auto id = decode(relative);
  if (!id) return std::nullopt;
  name.instance = std::move(*id);
  return name;
}

// Lives on the writer's thread once created: only jobs of the writer touch it.
struct instance_logs::log_file {
  std::string path;
  std::string root, relative;  ///< the logs directory, and `path` below it
  std::uint64_t max_bytes = 0;
  bool replace = true;  // the first open in this run starts the file afresh (a resume re-runs it)
  std::shared_ptr<std::unordered_set<std::string>> made_dirs;
  int fd = -1;
  std::uint64_t size = 0;
  bool failed = false;

  ~log_file() {
    if (fd >= 0) ::close(fd);
  }

  // 0 or an errno value.
  int open_file(bool truncate) {
    auto parent = std::filesystem::path(path).parent_path().string();
    if (!made_dirs->contains(parent)) {
      std::error_code ec;
      if (!make_private_directories(parent, ec)) return ec.value();
      made_dirs->insert(std::move(parent));
    }
    // Never written through a symlink planted as a log file.
    int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
    if (truncate) flags |= O_TRUNC;
    fd = ::open(path.c_str(), flags, 0600);
    if (fd < 0) return errno;
    struct stat st{};
    size = ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    return 0;
  }

  // The current file becomes NAME.1 and a new one starts.
  int rotate() {
    ::close(fd);
    fd = -1;
    if (::rename(path.c_str(), (path + ".1").c_str()) != 0) return errno;
    return open_file(true);
  }

  int write(std::string_view data) {
    if (fd < 0) {
      if (replace) {
        // A new file, not a truncated one: `arun logs -f` sees a new inode and reads it from
        // the start, as after a rotation.
        // Through the logs directory's descriptor: nothing on the way leads the removal out.
        if (auto opened = owned_dir::open(root); auto* logs = std::get_if<owned_dir>(&opened)) {
          (void)logs->remove(relative + ".1");
          (void)logs->remove(relative);
        }
      }
      if (const int err = open_file(std::exchange(replace, false))) return err;
    }
    // Past the bound only the newest `max_bytes`, from a line start where there is one.
    if (data.size() > max_bytes) {
      data.remove_prefix(data.size() - max_bytes);
      if (const auto nl = data.find('\n'); nl != std::string_view::npos && nl + 1 < data.size())
        data.remove_prefix(nl + 1);
    }
    if (size > 0 && size + data.size() > max_bytes)
      if (const int err = rotate()) return err;
    if (const int err = write_all(fd, data)) return err;
    size += data.size();
    return 0;
  }

  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

instance_logs::instance_logs(std::string dir, std::uint64_t max_bytes, std::shared_ptr<background_writer> writer,
                             line_filter filter, bool fresh)
    : dir_(std::move(dir)), max_bytes_(max_bytes), writer_(std::move(writer)), filter_(std::move(filter)),
      fresh_(fresh) {}

instance_logs::~instance_logs() {
  std::vector<std::string> instances;
  for (const auto& [instance, paths] : open_by_instance_) instances.push_back(instance);
  for (const auto& instance : instances) close_instance(instance);
}

void instance_logs::on_event(const event& e) noexcept {
  try {
    switch (e.kind) {
      case event_kind::step_output: add_line(e); break;
      case event_kind::step_retry: {
        // The next attempt appends to the same files: say where it starts.
        const auto it = open_by_instance_.find(e.step);
        if (it == open_by_instance_.end()) break;
        const auto why = std::string_view(e.message).substr(0, e.message.find('\n'));
        const auto marker = fmt::format("--- arun: attempt {} failed{}{}; attempt {} follows ---\n", e.attempt,
                                        why.empty() ? "" : ": ", why, e.attempt + 1);
        for (const auto& relative : it->second) open_[relative].pending += filter_ ? filter_(marker) : marker;
        break;
      }
      case event_kind::step_end:
        if (e.step_type != "hook") close_instance(e.step);
        break;
      default: break;
    }
  } catch (...) {
    record_error("cannot keep a step's output in its log: out of memory");
  }
}

void instance_logs::add_line(const event& e) {
  const bool hooks = e.step_type == "hook";
  const auto relative = instance_log_path(e.step, e.stream, hooks);
  auto [it, created] = open_.try_emplace(relative);
  auto& log = it->second;
  if (created) {
    log.file = std::make_shared<log_file>();
    log.file->path = dir_ + "/" + relative;
    log.file->root = dir_;
    log.file->relative = relative;
    log.file->max_bytes = max_bytes_;
    log.file->made_dirs = made_dirs_;
    // Started afresh once per run (a resume re-runs the instance); after that appended to. A
    // new session has nothing to replace.
    log.file->replace = started_.insert(relative).second && !fresh_;
    open_by_instance_[e.step].push_back(relative);
    if (!hooks) written_[e.step] |= e.stream == output_stream::out ? 1 : 2;
  }
  if (filter_)
    log.pending += filter_(e.line);
  else
    log.pending += e.line;
  if (e.line_truncated) log.pending += fmt::format(" [arun: line cut at {} bytes]", e.line.size());
  log.pending += '\n';
  if (log.pending.size() >= hand_over_bytes) hand_over(log);
}

void instance_logs::hand_over(open_log& log) {
  if (log.pending.empty()) return;
  auto data = std::exchange(log.pending, {});
  const auto bytes = data.size();
  writer_->post(bytes, [file = log.file, data = std::move(data), mutex = error_mutex_, error = error_]() {
    if (file->failed) return;
    if (const int err = file->write(data)) {
      file->failed = true;
      file->close();
      std::lock_guard lock(*mutex);
      if (error->empty()) *error = fmt::format("cannot write log '{}': {}", file->path, std::strerror(err));
    }
  });
}

void instance_logs::close_instance(const std::string& instance) {
  const auto it = open_by_instance_.find(instance);
  if (it == open_by_instance_.end()) return;
  for (const auto& relative : it->second) {
    const auto log = open_.find(relative);
    if (log == open_.end()) continue;
    hand_over(log->second);
    // Closed after its last write; a later line (a post_step hook's) opens it again, appending.
    writer_->post(0, [file = log->second.file] { file->close(); });
    open_.erase(log);
  }
  open_by_instance_.erase(it);
}

void instance_logs::flush() noexcept {
  try {
    for (auto& [relative, log] : open_) hand_over(log);
  } catch (...) {
    record_error("cannot keep a step's output in its log: out of memory");
  }
}

std::vector<std::string> instance_logs::files_of(std::string_view instance) const {
  std::vector<std::string> out;
  const auto it = written_.find(std::string(instance));
  if (it == written_.end()) return out;
  if (it->second & 2) out.push_back(dir_ + "/" + instance_log_path(instance, output_stream::err));
  if (it->second & 1) out.push_back(dir_ + "/" + instance_log_path(instance, output_stream::out));
  return out;
}

std::string instance_logs::error() const {
  std::lock_guard lock(*error_mutex_);
  return *error_;
}

void instance_logs::record_error(std::string why) {
  std::lock_guard lock(*error_mutex_);
  if (error_->empty()) *error_ = std::move(why);
}

}  // namespace arun::io
