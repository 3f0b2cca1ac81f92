#include "session/session_store.hpp"

#include "session/journal_spend.hpp"
#include "session/session_record.hpp"

#include "output/arun_log.hpp"
#include "output/event_json.hpp"
#include "files/fd_write.hpp"
#include "files/json_text.hpp"
#include "files/owned_tree.hpp"
#include "files/private_files.hpp"
#include "files/directory_trust.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace arun::io {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The largest copy of a recipe file a resume reads back: far beyond any recipe.
constexpr std::size_t max_source_bytes = std::size_t{256} << 20;

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// The session's lock, taken without waiting; the holder's pid goes in the file for messages.
std::variant<int, std::string> take_lock(const std::string& dir, const std::string& id) {
  const auto path = dir + "/lock";
  // Never through a link: the pid written here would truncate what it leads to.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot open " + path + ": " + errno_text(errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    if (auto text = read_whole_file(path); text && !text->empty()) holder = " (pid " + text->substr(0, text->find('\n')) + ")";
    ::close(fd);
    if (err == EWOULDBLOCK) return "session " + id + " is in use by another arun" + holder;
    return "cannot lock " + path + ": " + errno_text(err);
  }
  const auto pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)write_all(fd, pid);
  return fd;
}

std::variant<int, std::string> open_journal(const std::string& dir) {
  const auto path = dir + "/journal.jsonl";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot open " + path + ": " + errno_text(errno);
  return fd;
}

}  // namespace

bool valid_session_id(std::string_view id) {
  if (id.empty() || id.size() > 64 || id.front() == '.' || id.front() == '-') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
  });
}

bool session_is_live(const std::string& dir) {
  // A listing or a prune may meet a planted session: no link followed, no device made the
  // terminal, no FIFO waited on.
  const int fd = ::open((dir + "/lock").c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

namespace {

std::string named_session_root(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ARUN_SESSION_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) return std::string(xdg) + "/arun/sessions";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.local/state/arun/sessions";
}

}  // namespace

std::string session_root(const std::string& flag) {
  // Every command looks where a run keeps them: the user's subdirectory of a shared one.
  return per_user_path(named_session_root(flag), ::geteuid());
}

trusted_directory checked_session_root(const std::string& flag, trust_mode mode) {
  return trust_directory(named_session_root(flag), "--session-dir", mode);
}

std::string write_file_atomically(const std::string& path, std::string_view text) {
  // The temp file is new and ours: a random name made with O_EXCL, never a file someone else
  // put in the directory first (a report's -o may name a directory others can write).
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    std::uint64_t random = 0;
    if (::getrandom(&random, sizeof random, 0) != sizeof random) random ^= static_cast<std::uint64_t>(::getpid()) << 20 ^ attempt;
    temp = fmt::format("{}.tmp-{:016x}", path, random);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return "cannot write " + temp + ": " + errno_text(errno);
  int err = write_all(fd, text);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  if (err == 0 && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    return "cannot write " + path + ": " + errno_text(err);
  }
  // The rename is durable once the directory is.
  const auto dir = fs::path(path).parent_path().string();
  if (const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

// ---- session_sources -------------------------------------------------------------------

std::string session_sources::key(const std::string& path) {
  std::error_code ec;
  auto canonical = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : canonical.string();
}

std::optional<std::string> session_sources::saved(const std::string& path) {
  if (!replay_) return std::nullopt;
  if (auto it = files_.find(key(path)); it != files_.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> session_sources::copy_of(const std::string& path) const {
  if (auto it = files_.find(key(path)); it != files_.end()) return it->second;
  return std::nullopt;
}

void session_sources::read(const std::string& path, std::string_view text) {
  const auto k = key(path);
  if (files_.contains(k)) return;
  files_.emplace(k, std::string(text));
  if (dir_.empty()) return;
  const auto name = std::to_string(names_.size()) + "-" + fs::path(k).filename().string();
  if (write_file_atomically(dir_ + "/sources/" + name, text).empty()) {
    names_.emplace(k, name);
    write_manifest();
  }
}

void session_sources::attach(const std::string& dir) {
  dir_ = dir;
  std::error_code ec;
  make_private_directories(dir_ + "/sources", ec);
  for (const auto& [k, text] : files_) {
    if (names_.contains(k)) continue;
    const auto name = std::to_string(names_.size()) + "-" + fs::path(k).filename().string();
    if (write_file_atomically(dir_ + "/sources/" + name, text).empty()) names_.emplace(k, name);
  }
  write_manifest();
}

std::vector<std::string> session_sources::changed_on_disk() const {
  std::vector<std::string> out;
  for (const auto& [path, text] : files_) {
    const auto now = read_whole_file(path);
    if (!now) out.push_back(path + " (deleted)");
    else if (*now != text) out.push_back(path);
  }
  return out;
}

void session_sources::write_manifest() {
  json::object manifest;
  for (const auto& [k, name] : names_) manifest[k] = name;
  (void)write_file_atomically(dir_ + "/sources.json", to_json_text(manifest) + "\n");
}

std::variant<std::unique_ptr<session_sources>, std::string> session_sources::load(const std::string& dir) {
  auto out = std::make_unique<session_sources>();
  out->dir_ = dir;
  out->replay_ = true;
  const auto text = read_whole_file(dir + "/sources.json");
  if (!text) return out;  // a session of a recipe that read no file besides recipe.yaml
  boost::system::error_code ec;
  auto manifest = parse_json_text(*text, ec);
  if (ec || !manifest.is_object()) return "the session's sources.json is unreadable: " + dir + "/sources.json";
  // The manifest is data: a name in it is a file in sources/, read below the session's
  // descriptor, never a path (`../..`, a link) to a file elsewhere.
  auto session = owned_dir::open(dir);
  if (auto* error = std::get_if<std::string>(&session)) return *error;
  for (const auto& kv : manifest.get_object()) {
    if (!kv.value().is_string()) continue;
    const std::string name(kv.value().get_string());
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      return "the session's sources.json names '" + name + "', which is no file in " + dir + "/sources";
    std::string why_not;
    auto copy = std::get<owned_dir>(session).read_file("sources/" + name, max_source_bytes, why_not);
    if (!copy) return "the session's copy of " + std::string(kv.key()) + " cannot be read: " + why_not;
    out->files_.emplace(std::string(kv.key()), std::move(*copy));
    out->names_.emplace(std::string(kv.key()), name);
  }
  return out;
}

// ---- session_store ---------------------------------------------------------------------

std::variant<std::unique_ptr<session_store>, std::string> session_store::create(const std::string& root,
                                                                                const std::string& id) {
  const auto dir = root + "/" + id;
  std::error_code ec;
  make_private_directories(dir, ec);
  if (ec) return "cannot create the session directory " + dir + ": " + ec.message();
  auto lock = take_lock(dir, id);
  if (auto* e = std::get_if<std::string>(&lock)) return *e;
  auto journal = open_journal(dir);
  if (auto* e = std::get_if<std::string>(&journal)) {
    ::close(std::get<int>(lock));
    return *e;
  }
  std::unique_ptr<session_store> s(new session_store(id, dir, std::get<int>(lock), std::get<int>(journal)));
  s->state_["format"] = session_format;
  s->state_["arun_version"] = ARUN_VERSION;
  s->state_["session_id"] = id;
  s->state_["status"] = "running";
  // To the millisecond: `last` tells sessions created in the same second apart by it.
  s->state_["created"] = format_rfc3339_ms(std::chrono::system_clock::now());
  s->make_reserve();
  return s;
}

namespace {

bool current_format(const json::object& o) {
  const auto* format = o.if_contains("format");
  return format && format->is_int64() && format->get_int64() == session_format;
}

}  // namespace

std::variant<json::object, std::string> session_store::read_state(const std::string& dir, std::size_t max_bytes) {
  const auto path = dir + "/state.json";
  // Through the session's descriptor, never blocking: a FIFO, a device or a symlink planted as
  // state.json is unreadable, not a hang (docs/security.md, "Paths arun deletes or follows").
  auto session = owned_dir::open(dir);
  if (auto* error = std::get_if<std::string>(&session)) return *error;
  std::string why_not;
  const auto text = std::get<owned_dir>(session).read_file("state.json", max_bytes, why_not);
  if (!text) return why_not.starts_with("no such file") ? "no state.json in " + dir : why_not;
  boost::system::error_code ec;
  auto v = parse_json_text(*text, ec);
  if (ec || !v.is_object()) return path + " is not a JSON object (" + (ec ? ec.message() : std::string("wrong type")) + ")";
  auto& o = v.get_object();
  const auto* format = o.if_contains("format");
  if (!current_format(o))
    return path + " has state format " + (format ? to_compact_json(*format) : std::string("none")) + "; this arun reads format " +
           std::to_string(session_format);
  return std::move(o);
}

namespace {

// state.json reads as an object of another format: not damage, another arun's session.
bool other_format(const std::string& dir) {
  const auto text = read_whole_file(dir + "/state.json");
  if (!text) return false;
  boost::system::error_code ec;
  const auto v = parse_json_text(*text, ec);
  if (ec || !v.is_object()) return false;
  return v.get_object().contains("format") && !current_format(v.get_object());
}

// The snapshot of a session whose state.json is damaged or gone, from origin.json.
std::optional<json::object> origin_state(const std::string& dir, const std::string& id) {
  const auto text = read_whole_file(dir + "/origin.json");
  if (!text) return std::nullopt;
  boost::system::error_code ec;
  auto v = parse_json_text(*text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  auto& o = v.get_object();
  if (!current_format(o)) return std::nullopt;
  o["session_id"] = id;
  o["status"] = "failed";
  o["error"] = "state.json was damaged; rebuilt from origin.json and the journal";
  return std::move(o);
}

}  // namespace

std::variant<std::unique_ptr<session_store>, std::string> session_store::open(const std::string& root,
                                                                              const std::string& id, bool retry_failed) {
  if (!valid_session_id(id)) return "'" + id + "' is not a session id (like 20261121-134501-3f9a2c)";
  const auto dir = root + "/" + id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "no session " + id + " in " + root;
  // A symlink is no session arun made: a resume removes trees below it.
  if (fs::is_symlink(dir, ec)) return dir + " is a symlink, not a session directory arun made";
  // A session's files are data, and arun writes its own by name (the lock, the journal, logs,
  // outputs, job files): a link or a second hard link planted among them would lead those
  // writes to a file elsewhere (docs/security.md, "Paths arun deletes or follows").
  auto opened = owned_dir::open(dir);
  if (auto* error = std::get_if<std::string>(&opened)) return *error;
  if (auto planted = std::get<owned_dir>(opened).planted_entry({"worktrees", "copies"}); !planted.empty())
    return planted + ", which no session arun made holds: arun writes nothing in it (remove that entry, or the session)";
  auto lock = take_lock(dir, id);
  if (auto* e = std::get_if<std::string>(&lock)) return *e;
  auto fail = [&](std::string message) {
    ::close(std::get<int>(lock));
    return message;
  };
  auto state = read_state(dir);
  std::string rebuilt_because;
  if (auto* e = std::get_if<std::string>(&state)) {
    // Damage (not another format): the facts that never change are in origin.json, what
    // finished is in the journal.
    auto origin = other_format(dir) ? std::nullopt : origin_state(dir, id);
    if (!origin) return fail(*e);
    rebuilt_because = *e;
    state = std::move(*origin);
  }
  if (!fs::is_regular_file(dir + "/recipe.yaml", ec)) return fail("the session's recipe copy " + dir + "/recipe.yaml is missing");
  auto journal = open_journal(dir);
  if (auto* e = std::get_if<std::string>(&journal)) return fail(*e);
  std::unique_ptr<session_store> s(new session_store(id, dir, std::get<int>(lock), std::get<int>(journal)));
  s->state_ = std::move(std::get<json::object>(state));
  s->origin_written_ = fs::is_regular_file(dir + "/origin.json", ec);
  if (!rebuilt_because.empty())
    s->notices_.push_back(rebuilt_because + ": rebuilt from origin.json and the journal (approvals decided before are asked again)");
  s->resumed_ = true;
  s->load_journal(retry_failed);
  s->make_reserve();
  return s;
}

namespace {

// The instance a damaged journal line still names under `key`, if its JSON reads.
std::string named_in(std::string_view line, std::string_view key) {
  boost::system::error_code ec;
  const auto v = parse_json_text(line, ec);
  if (ec || !v.is_object()) return {};
  const auto* instance = v.get_object().if_contains(key);
  return instance && instance->is_string() ? std::string(instance->get_string()) : std::string();
}

// The instances that contain `instance`: `fan[3]/x` -> `fan[3]`, `fan`; `call/x` -> `call`.
std::vector<std::string> containers_of(std::string instance) {
  std::vector<std::string> out;
  while (!instance.empty()) {
    if (instance.back() == ']') {
      const auto open = instance.rfind('[');
      if (open == std::string::npos) break;
      instance.resize(open);
    } else {
      const auto slash = instance.rfind('/');
      if (slash == std::string::npos) break;
      instance.resize(slash);
    }
    if (!instance.empty()) out.push_back(instance);
  }
  return out;
}

// The prefix the instances of one list of steps share: `fan[2]/b` -> `fan[2]/`, `a` -> ``.
std::string parent_of(const std::string& instance) {
  const auto slash = instance.rfind('/');
  return slash == std::string::npos ? std::string() : instance.substr(0, slash + 1);
}

// The lists of steps a skip_remaining failure of `instance` skipped the rest of: its own, and
// through every loop it is in, the loop's, up to the recipe it runs in (docs/reference/recipe.md,
// on_error: it ends the enclosing loop and skips the rest of the recipe; a sub-recipe's stays
// inside it). `fan[2]/a` -> `fan[2]/`, ``; `call/fan[0]/a` -> `call/fan[0]/`, `call/`.
std::vector<std::string> skipped_by(const std::string& instance) {
  std::vector<std::string> out{parent_of(instance)};
  while (out.back().size() >= 2 && out.back()[out.back().size() - 2] == ']') {  // an iteration's body
    const auto open = out.back().rfind('[');
    if (open == std::string::npos) break;
    out.push_back(parent_of(out.back().substr(0, open)));
  }
  return out;
}

}  // namespace

void session_store::load_journal(bool retry_failed) {
  const auto path = dir_ + "/journal.jsonl";
  const auto text = read_whole_file(path).value_or("");
  std::string_view rest(text);
  std::size_t whole = 0;  // bytes up to the end of the last complete line
  std::map<std::string, bool, std::less<>> last_kept;  // instance -> whether its last record is kept
  std::vector<std::size_t> damaged;                    // line numbers
  std::size_t line_number = 0;
  journal_spend spend;
  std::vector<std::string> retried_skips;  // the lists of steps a retried skip_remaining failure skipped (skipped_by)
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    if (end == std::string_view::npos) break;  // a torn last line: that instance runs again
    const auto line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    whole += end + 1;
    ++line_number;
    if (auto call = parse_usage_line(line)) {  // a call's usage, not an instance's record
      spend.usage_line(call->instance, call->usage);
      continue;
    }
    auto record = parse_journal_line(line);
    if (!record && is_usage_line(line)) {  // a call was paid for, but how much cannot be read
      spend.damaged_line(named_in(line, "call_of"), line_number);
      continue;
    }
    if (record) spend.record(record->result.step_id, record->result.usage ? &*record->result.usage : nullptr);
    if (!record) {
      damaged.push_back(line_number);
      // A line that still names its instance: that instance runs again, with what contains it.
      const auto named = named_in(line, "instance");
      if (!named.empty()) {
        last_kept.insert_or_assign(named, false);
        loaded_.erase(named);
      }
      continue;
    }
    ++records_;
    const auto status = record->result.status;
    const std::string instance = record->result.step_id;
    // The steps a retried skip_remaining failure skipped are decided again after it: skipped
    // records after it in its own list of steps (docs/sessions.md, "Resume").
    if (status == step_status::skipped && std::any_of(retried_skips.begin(), retried_skips.end(), [&](const std::string& p) {
          return parent_of(instance) == p;
        })) {
      last_kept.insert_or_assign(instance, false);
      loaded_.erase(instance);
      continue;
    }
    // docs/sessions.md, "Resume": completed, skipped and degraded instances are never re-run;
    // non-fatal failures stay failed unless --retry-failed; fatal failures and everything else runs
    // again.
    const bool keep = status == step_status::completed || status == step_status::skipped ||
                      status == step_status::degraded ||
                      (status == step_status::failed && !record->result.fatal && !retry_failed);
    if (status == step_status::failed && !keep && record->result.skipped_rest)
      for (auto& prefix : skipped_by(instance)) retried_skips.push_back(std::move(prefix));
    last_kept.insert_or_assign(instance, keep);
    if (keep)
      loaded_.insert_or_assign(instance, std::move(*record));
    else
      loaded_.erase(instance);  // a later record of the same instance wins
  }
  // An instance that runs again re-opens what contains it (a loop, a sub-recipe call), or the
  // container's record would be replayed without it.
  for (const auto& [instance, kept] : last_kept)
    if (!kept) {
      runs_again_.insert(instance);
      for (const auto& container : containers_of(instance)) loaded_.erase(container);
    }
  // Every source of spend counts (journal_spend.hpp); then the run counts no replayed record
  // again (run_state).
  if (spend.any()) earlier_usage_ = spend.total();
  // Cut a torn last line off, or the next record would be glued to it and lost.
  if (whole < text.size() && ::truncate(path.c_str(), static_cast<off_t>(whole)) != 0)
    set_journal_error("cannot cut the torn last line off " + path + ": " + errno_text(errno));
  queued_records_ = records_;
  report_damage(path, damaged);
  if (const auto lost = spend.lost_lines(); !lost.empty()) {
    std::string lines;
    for (std::size_t k = 0; k < lost.size() && k < 10; ++k) lines += (k ? ", " : "") + std::to_string(lost[k]);
    if (lost.size() > 10) lines += ", ...";
    notices_.push_back(std::to_string(lost.size()) + " agent call" + (lost.size() == 1 ? "'s" : "s'") + " usage in " +
                       path + " " + (lost.size() == 1 ? "is" : "are") + " damaged (line " + lines +
                       ") and no record of the instance stands for it: what it cost is not counted");
  }
}

// What resume could not read, said before it runs anything (issue: damage went unnoticed).
void session_store::report_damage(const std::string& path, const std::vector<std::size_t>& damaged) {
  if (!damaged.empty()) {
    std::string lines;
    for (std::size_t k = 0; k < damaged.size() && k < 10; ++k) lines += (k ? ", " : "") + std::to_string(damaged[k]);
    if (damaged.size() > 10) lines += ", ...";
    notices_.push_back(std::to_string(damaged.size()) + " line" + (damaged.size() == 1 ? " of " : "s of ") + path +
                       (damaged.size() == 1 ? " is" : " are") + " damaged (line " + lines +
                       "): the step instances recorded there run again");
  }
  const auto* written = state_.if_contains("records");
  const auto expected = written && written->is_int64() ? static_cast<std::size_t>(written->get_int64()) : 0;
  if (expected > records_ + damaged.size())
    notices_.push_back(path + " holds " + std::to_string(records_ + damaged.size()) + " records but the session had " +
                       "written " + std::to_string(expected) + " (was it removed or cut short?): the " +
                       std::to_string(expected - records_ - damaged.size()) + " missing finished instances run again");
}

// Room for the final snapshot when the disk fills up during the run: freed by
// save_state_after_failure, removed when the run ends. Best effort: without it the final
// snapshot may not fit, and the session then says `running` until it is resumed.
constexpr std::size_t reserve_bytes = 64 * 1024;

void session_store::make_reserve() noexcept {
  const auto path = dir_ + "/reserve";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool kept = ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes)) == 0;
  ::close(fd);
  if (!kept) ::unlink(path.c_str());
}

void session_store::drop_reserve() noexcept { (void)::unlink((dir_ + "/reserve").c_str()); }

void session_store::fail(std::string why) noexcept {
  std::function<void(const std::string&)> handler;
  {
    std::lock_guard lock(errors_mutex_);
    if (!failure_.empty()) return;
    failure_ = std::move(why);
    handler = on_failure_;
    why = failure_;
  }
  if (handler) handler(why);
}

void session_store::report_failure(std::string why) noexcept {
  set_journal_error(why);
  fail(std::move(why));
}

void session_store::on_failure(std::function<void(const std::string&)> handler) {
  std::lock_guard lock(errors_mutex_);
  on_failure_ = std::move(handler);
}

std::string session_store::failure() const {
  std::lock_guard lock(errors_mutex_);
  return failure_;
}

std::string session_store::journal_error() const {
  std::lock_guard lock(errors_mutex_);
  return journal_error_;
}

std::size_t session_store::failures_kept() const {
  return static_cast<std::size_t>(std::count_if(loaded_.begin(), loaded_.end(), [](const auto& entry) {
    return entry.second.result.status == step_status::failed;
  }));
}

bool session_store::journal_failed() const {
  std::lock_guard lock(errors_mutex_);
  return !journal_error_.empty();
}

void session_store::set_journal_error(std::string why) noexcept {
  std::lock_guard lock(errors_mutex_);
  if (journal_error_.empty()) journal_error_ = std::move(why);
}

bool session_store::flush(std::optional<std::chrono::milliseconds> limit) {
  if (!writer_) return true;
  if (!limit) {
    writer_->drain();
    return true;
  }
  return writer_->drain_for(*limit);
}

std::string session_store::save_state_after_failure() {
  drop_reserve();
  auto error = save_state();
  if (error.empty()) return error;
  // The context can be large; resume rebuilds it from the journal, so a snapshot without it
  // still lets the session be resumed.
  state_.erase("context");
  state_.erase("steps");
  return save_state();
}

session_store::~session_store() {
  sync();
  flush();  // queued writes refer to this store
  drop_reserve();
  if (journal_fd_ >= 0) ::close(journal_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string session_store::save_state() {
  flush();  // after the records it counts
  // Written again when the masker has learnt a secret since (a sub-recipe's `secrets:`): a
  // value given as a --set too is then masked there as well.
  const auto forms = masker_ ? masker_->forms() : 0;
  if ((!origin_written_ || forms != origin_masked_forms_) && state_.contains("invocation")) {
    // What never changes, apart from state.json, so a damaged state.json can be rebuilt.
    json::object origin;
    for (const char* key : {"format", "arun_version", "session_id", "created", "recipe_name", "recipe_path", "invocation"})
      if (const auto* v = state_.if_contains(key)) origin[key] = *v;
    // Masked as state.json is: a secret's value given as a --set too stays out of it.
    json::value masked = std::move(origin);
    if (masker_) masker_->mask_json(masked);
    if (auto error = write_file_atomically(dir_ + "/origin.json", to_json_text(masked) + "\n"); !error.empty()) {
      fail(error);
      return error;
    }
    origin_written_ = true;
    origin_masked_forms_ = forms;
  }
  state_["updated"] = now_rfc3339();
  state_["records"] = records_.load();
  auto error = write_file_atomically(dir_ + "/state.json", state_text());
  if (!error.empty()) fail(error);
  return error;
}

std::string session_store::state_text() const {
  if (!masker_ || masker_->empty()) return to_json_text(state_) + "\n";
  json::value copy = state_;
  masker_->mask_json(copy);
  return to_json_text(copy) + "\n";
}

void session_store::save_state_soon() {
  if (!writer_ || !origin_written_) {
    (void)save_state();
    return;
  }
  state_["updated"] = now_rfc3339();
  state_["records"] = queued_records_;  // all written by the time this is
  auto text = state_text();
  const auto size = text.size();
  writer_->post(size, [this, text = std::move(text)] {
    if (auto error = write_file_atomically(dir_ + "/state.json", text); !error.empty()) fail(error);
  });
}

void session_store::sync() noexcept {
  last_sync_ = std::chrono::steady_clock::now();
  if (!writer_) return sync_now();
  try {
    writer_->post(0, [this] { sync_now(); });
  } catch (const std::exception&) {
    sync_now();  // no memory to queue it: in place
  }
}

void session_store::sync_now() noexcept {
  if (journal_fd_ < 0 || !dirty_) return;
  const auto start = std::chrono::steady_clock::now();
  const bool synced = ::fsync(journal_fd_) == 0;
  const int err = errno;
  const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  try {  // a slow disk shows here first
    if (took > 200) arun_log().warn("journal fsync took {:.1f} ms ({} records)", took, records_.load());
    else arun_log().debug("journal fsync {:.1f} ms ({} records)", took, records_.load());
  } catch (...) {
  }
  if (!synced) {
    std::string error = "cannot sync " + dir_ + "/journal.jsonl to disk: " + errno_text(err);
    set_journal_error(error);
    fail(std::move(error));
  }
  dirty_ = false;
}

void session_store::queue_line(std::string line, bool counted) {
  if (writer_) {
    const auto size = line.size();
    writer_->post(size, [this, counted, line = std::move(line)] { append_record(line, counted); });
  } else {
    append_record(line, counted);
  }
}

void session_store::record_usage(std::string_view instance_id, const agent_usage& call) noexcept {
  if (journal_failed()) return;
  try {
    queue_line(usage_line(instance_id, call, masker_), false);
  } catch (const std::exception& e) {
    std::string error = std::string("cannot record an agent call's usage in the journal: ") + e.what();
    set_journal_error(error);
    fail(std::move(error));
  }
}

std::optional<std::vector<agent_usage>> session_store::recorded_usage() const { return earlier_usage_; }

void session_store::record(const step_result& result, const json::object& context_delta) noexcept {
  if (journal_failed()) return;  // a partial line followed by more lines would corrupt it
  try {
    auto line = journal_line(result, context_delta, masker_);
    ++queued_records_;
    queue_line(std::move(line), true);
    // Durable at least once a second without an fsync per step (docs/sessions.md,
    // "Where sessions live").
    if (std::chrono::steady_clock::now() - last_sync_ >= std::chrono::seconds(1)) sync();
    // A fresh snapshot every few hundred records keeps `sessions list` progress current.
    if (queued_records_ % 500 == 0) save_state_soon();
  } catch (const std::exception& e) {
    std::string error = std::string("cannot record a step in the journal: ") + e.what();
    set_journal_error(error);
    fail(std::move(error));
  }
}

void session_store::append_record(const std::string& line, bool counted) noexcept {
  if (journal_failed()) return;
  if (const int err = write_all(journal_fd_, line); err != 0) {
    std::string error = "cannot write " + dir_ + "/journal.jsonl: " + errno_text(err);
    set_journal_error(error);
    fail(std::move(error));
    return;
  }
  if (counted) ++records_;
  dirty_ = true;
}

bool session_store::recorded(std::string_view instance_id) const noexcept {
  for (auto end = instance_id.size(); end != std::string_view::npos && end > 0;
       end = instance_id.rfind('/', end - 1)) {
    const auto id = instance_id.substr(0, end);
    if (loaded_.contains(id) || runs_again_.contains(id)) return true;
  }
  return false;
}

const finished_instance* session_store::find(std::string_view instance_id) const noexcept {
  const auto it = loaded_.find(instance_id);
  return it == loaded_.end() ? nullptr : &it->second;
}

}  // namespace arun::io
