#include "cache/result_store.hpp"

#include "cache/file_digest.hpp"
#include "cache/sha256.hpp"
#include "files/fd_write.hpp"
#include "files/json_text.hpp"
#include "files/owned_tree.hpp"
#include "files/private_files.hpp"
#include "output/event_json.hpp"

#include <boost/json/object.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace arun::io {
namespace {

namespace json = boost::json;
using wall_clock = std::chrono::system_clock;

constexpr std::int64_t entry_format = 1;
constexpr std::string_view temp_prefix = ".tmp-";
// A temp file this old belongs to a writer that died: a live one renames it within moments.
constexpr auto stale_temp_age = std::chrono::hours(1);

std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

wall_clock::time_point mtime_of(const struct stat& st) {
  const auto since_epoch = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  return wall_clock::time_point(std::chrono::duration_cast<wall_clock::duration>(since_epoch));
}

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The rest of the open file `fd`; false on a read error.
bool read_rest(int fd, std::string& out) {
  char block[64 * 1024];
  for (;;) {
    const auto n = ::read(fd, block, sizeof block);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out.append(block, static_cast<std::size_t>(n));
  }
}

struct fd_closer {
  int fd;
  ~fd_closer() { ::close(fd); }
};

// A name no other writer (process or thread) picks at the same moment.
std::string temp_name() {
  std::uint64_t random = 0;
  if (::getrandom(&random, sizeof random, GRND_NONBLOCK) != sizeof random) {
    static std::atomic<std::uint64_t> counter{0};
    random = static_cast<std::uint64_t>(wall_clock::now().time_since_epoch().count()) ^ (++counter << 48);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random));
  return std::string(temp_prefix) + std::to_string(::getpid()) + "-" + std::to_string(::gettid()) + "-" + hex;
}

std::string entry_text(const std::string& key, const cached_output& output) {
  const auto created = output.created == wall_clock::time_point{} ? wall_clock::now() : output.created;
  json::object o;
  o["format"] = entry_format;
  o["key"] = key;
  o["created"] = format_rfc3339_ms(created);
  o["recipe"] = output.recipe;
  o["instance"] = output.instance;
  o["session"] = output.session;
  o["duration_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(output.duration).count();
  o["arun_version"] = ARUN_VERSION;
  o["output_sha256"] = sha256_hex(output.stdout_text);
  o["output"] = output.stdout_text;
  return to_json_text(o) + "\n";
}

// The entry `text` holds when it is whole and is the one of `key`.
std::optional<cached_output> parse_entry(std::string_view text, const std::string& key) {
  boost::system::error_code ec;
  const auto v = parse_json_text(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  const auto* format = o.if_contains("format");
  if (format == nullptr || !format->is_int64() || format->get_int64() != entry_format) return std::nullopt;
  const auto* output = o.if_contains("output");
  if (string_member(o, "key") != key || output == nullptr || !output->is_string()) return std::nullopt;
  const std::string_view stdout_text = output->get_string();
  // A cut or edited file can still be valid JSON: the hash is what proves the output whole.
  if (string_member(o, "output_sha256") != sha256_hex(stdout_text)) return std::nullopt;
  const auto created = parse_rfc3339_ms(string_member(o, "created"));
  const auto* duration = o.if_contains("duration_ms");
  if (!created || duration == nullptr || !duration->is_int64() || duration->get_int64() < 0) return std::nullopt;
  cached_output entry;
  entry.stdout_text = std::string(stdout_text);
  entry.duration = std::chrono::milliseconds(duration->get_int64());
  entry.recipe = string_member(o, "recipe");
  entry.instance = string_member(o, "instance");
  entry.session = string_member(o, "session");
  entry.created = *created;
  return entry;
}

// One entry file or temp file seen by a scan of the cache.
struct file_seen {
  std::string key, path;
  std::size_t shard = 0;  ///< its directory, an index into scan_result::shards
  std::string name;       ///< its name there
  std::uint64_t bytes = 0;
  wall_clock::time_point mtime{};
  ino_t inode = 0;
};

struct scan_result {
  std::vector<owned_dir> shards;  ///< every file is reached through these, never by path
  std::vector<file_seen> entries, temps;
  std::vector<std::string> refused;  ///< what the scan would not enter, and why
};

// Every `results/KK/KEY.json` and `results/KK/.tmp-*` below `dir`, by their stat alone, each
// reached through the descriptors of `dir` (a root the user named: it may be a symlink),
// `results` and its shard (neither may be: a symlinked shard is refused, so nothing outside
// the cache is listed or removed). Only the user's own files count. Files that vanish
// meanwhile (another process's trim) are left out; false with `error` set only when
// `dir/results` exists but cannot be read.
bool scan(const std::string& dir, scan_result& out, std::string& error) {
  const auto results = dir + "/results";
  struct stat top_st {};
  if (::stat(results.c_str(), &top_st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return true;
  auto root = owned_dir::open(dir, owned_dir::link::follow);
  auto* root_dir = std::get_if<owned_dir>(&root);
  auto top = root_dir ? root_dir->open_below("results") : std::variant<owned_dir, std::string>(std::get<std::string>(root));
  if (auto* why = std::get_if<std::string>(&top)) {
    error = "cannot read " + results + ": " + *why;
    return false;
  }
  const auto& results_dir = std::get<owned_dir>(top);
  std::vector<std::string> shards;
  {
    const int listing = ::dup(results_dir.fd());
    DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr;
    if (d == nullptr) {
      if (listing >= 0) ::close(listing);
      error = "cannot read " + results + ": " + std::strerror(errno);
      return false;
    }
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      if (name.size() == 2 && is_hex(name)) shards.emplace_back(name);
    }
    ::closedir(d);
  }
  for (const auto& shard : shards) {
    auto opened = results_dir.open_below(shard);
    if (auto* why = std::get_if<std::string>(&opened)) {
      struct stat st {};
      // Removed meanwhile holds no entries; anything else that is no directory of the user's
      // (a symlink above all) is refused aloud.
      if (::fstatat(results_dir.fd(), shard.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        out.refused.push_back("left " + results + "/" + shard + " alone: " + *why);
      continue;
    }
    out.shards.push_back(std::move(std::get<owned_dir>(opened)));
    const auto index = out.shards.size() - 1;
    const int listing = ::dup(out.shards.back().fd());
    DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr;
    if (d == nullptr) {
      if (listing >= 0) ::close(listing);
      continue;
    }
    const auto shard_dir = results + "/" + shard;
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      const bool temp = name.substr(0, temp_prefix.size()) == temp_prefix;
      const auto key = name.size() > 5 && name.substr(name.size() - 5) == ".json" ? name.substr(0, name.size() - 5)
                                                                                  : std::string_view();
      if (!temp && !(result_store::valid_key(key) && key.substr(0, 2) == shard)) continue;
      struct stat st {};
      if (::fstatat(out.shards.back().fd(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
          st.st_uid != ::geteuid())
        continue;
      file_seen f{std::string(temp ? std::string_view() : key), shard_dir + "/" + std::string(name), index,
                  std::string(name), static_cast<std::uint64_t>(st.st_size), mtime_of(st), st.st_ino};
      (temp ? out.temps : out.entries).push_back(std::move(f));
    }
    ::closedir(d);
  }
  return true;
}

enum class removal_outcome { removed, gone, kept };

// Removes `f` unless another process replaced or used it since the scan saw it.
removal_outcome unlink_if_unchanged(const scan_result& seen, const file_seen& f, std::string& error) {
  const int dir = seen.shards[f.shard].fd();
  struct stat st {};
  if (::fstatat(dir, f.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? removal_outcome::gone : removal_outcome::kept;
  if (st.st_ino != f.inode || mtime_of(st) != f.mtime) return removal_outcome::kept;
  if (::unlinkat(dir, f.name.c_str(), 0) == 0) return removal_outcome::removed;
  if (errno == ENOENT) return removal_outcome::gone;
  if (error.empty()) error = "cannot remove " + f.path + ": " + std::strerror(errno);
  return removal_outcome::kept;
}

// What `arun cache list` shows of `f`, read through its shard's descriptor without following
// a symlink or blocking; nullopt when it was removed since the scan.
std::optional<result_store::entry_info> info_of(const scan_result& seen, file_seen f) {
  const int fd = ::openat(seen.shards[f.shard].fd(), f.name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  result_store::entry_info info;
  info.key = std::move(f.key);
  info.path = std::move(f.path);
  info.bytes = f.bytes;
  info.last_used = f.mtime;
  std::optional<cached_output> entry;
  if (fd >= 0) {
    const fd_closer closer{fd};
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      info.bytes = static_cast<std::uint64_t>(st.st_size), info.last_used = mtime_of(st);
      if (read_rest(fd, text)) entry = parse_entry(text, info.key);
    }
  }
  if (entry) {
    info.recipe = std::move(entry->recipe);
    info.instance = std::move(entry->instance);
    info.session = std::move(entry->session);
    info.created = entry->created;
    info.duration = entry->duration;
  } else {
    info.damaged = true;
    info.created = info.last_used;
  }
  return info;
}

}  // namespace

std::string default_cache_dir() {
  if (auto dir = env_value("ARUN_CACHE_DIR"); !dir.empty()) return dir;
  if (auto xdg = env_value("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/arun";
  auto home = env_value("HOME");
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
  return home.empty() ? std::string() : home + "/.cache/arun";
}

trusted_directory checked_cache_dir(const std::string& flag) {
  return trust_directory(flag.empty() ? default_cache_dir() : flag, "--cache-dir", trust_mode::look);
}

result_store::result_store(std::string dir, std::uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

bool result_store::valid_key(std::string_view key) noexcept {
  return key.size() >= 16 && key.size() <= 128 && is_hex(key);
}

std::string result_store::entry_path(const std::string& key) const {
  return dir_ + "/results/" + key.substr(0, 2) + "/" + key + ".json";
}

std::string result_store::hash(std::string_view material) const { return sha256_hex(material); }

std::string result_store::digest_files(const std::vector<std::string>& globs, const std::string& dir,
                                       std::vector<std::string>& warnings, std::string& error) const {
  return io::digest_files(globs, dir, warnings, error);
}

std::optional<cached_output> result_store::find(const std::string& key,
                                                std::optional<std::chrono::seconds> max_age) noexcept {
  try {
    if (dir_.empty() || !valid_key(key)) return std::nullopt;
    const int fd = ::open(entry_path(key).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return std::nullopt;
    const fd_closer closer{fd};
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    // Another user's entry (planted in a cache they could write once) is no output of ours.
    if (st.st_uid != ::geteuid()) {
      ++foreign_entries_;
      return std::nullopt;
    }
    text.reserve(static_cast<std::size_t>(st.st_size));
    if (!read_rest(fd, text)) return std::nullopt;
    auto entry = parse_entry(text, key);
    if (!entry) return std::nullopt;
    // Longer than this run keeps (--max-output): the step runs, and is cut as it would be.
    if (output_limit_ > 0 && entry->stdout_text.size() > output_limit_) return std::nullopt;
    // In whole seconds: ages are given in seconds, and max_age in nanoseconds could overflow.
    if (max_age && std::chrono::duration_cast<std::chrono::seconds>(wall_clock::now() - entry->created) >= *max_age)
      return std::nullopt;
    // mtime is "last used", which trim() evicts by; failing to set it costs nothing now.
    const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(fd, times);
    return entry;
  } catch (...) {
    return std::nullopt;  // out of memory for a huge entry: run the step instead
  }
}

std::string result_store::store(const std::string& key, const cached_output& output) noexcept {
  std::string temp;
  try {
    const auto failure = [&](std::string_view why) {
      return "cannot store the cached output of " + output.instance + " in " + dir_ + ": " + std::string(why);
    };
    if (dir_.empty()) return failure("no cache directory (set ARUN_CACHE_DIR or HOME)");
    if (!valid_key(key)) return failure("'" + key + "' is not a key made by the cache");
    const auto path = entry_path(key);
    const auto shard = path.substr(0, path.rfind('/'));
    // Checked again where it is made: a component missing at the start could be another user's now.
    if (const auto checked = trust_directory(dir_, "--cache-dir", trust_mode::make); !checked.ok())
      return failure(checked.error);
    std::error_code ec;
    if (!make_private_directories(shard, ec)) return failure(ec.message());
    const auto text = entry_text(key, output);
    // Beside the final name, so the rename stays in one file system and is atomic.
    temp = shard + "/" + temp_name();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int err = errno;
      temp.clear();
      return failure(std::strerror(err));
    }
    int err = write_all(fd, text);
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err == 0 && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
      ::unlink(temp.c_str());
      return failure(std::strerror(err));
    }
    stored_bytes_ += text.size();
    return {};
  } catch (...) {
    if (!temp.empty()) ::unlink(temp.c_str());
    try {
      return "cannot store the cached output of " + output.instance + " in " + dir_ + ": out of memory";
    } catch (...) {
      return {};  // not even room for the warning; the step's result is unaffected either way
    }
  }
}

std::vector<result_store::entry_info> result_store::list(std::string& error) const {
  scan_result seen;
  std::vector<entry_info> out;
  if (!scan(dir_, seen, error)) return out;
  for (auto& f : seen.entries)
    if (auto info = info_of(seen, std::move(f))) out.push_back(std::move(*info));
  std::sort(out.begin(), out.end(), [](const entry_info& a, const entry_info& b) {
    return a.last_used != b.last_used ? a.last_used > b.last_used : a.key < b.key;
  });
  return out;
}

result_store::removal result_store::remove_if(const std::function<bool(const entry_info&)>& doomed,
                                              std::string& error) {
  removal removed;
  scan_result seen;
  if (!scan(dir_, seen, error)) return removed;
  removed.refused = seen.refused;
  for (const auto& f : seen.entries) {
    const auto info = info_of(seen, f);
    if (!info || !doomed(*info)) continue;
    const int dir = seen.shards[f.shard].fd();
    if (::unlinkat(dir, f.name.c_str(), 0) == 0) {
      ++removed.entries;
      removed.bytes += info->bytes;
    } else if (errno != ENOENT && error.empty()) {
      error = "cannot remove " + f.path + ": " + std::strerror(errno);
    }
  }
  return removed;
}

result_store::removal result_store::trim(std::string& error) {
  removal removed;
  scan_result seen;
  if (!scan(dir_, seen, error)) return removed;
  removed.refused = seen.refused;
  const auto now = wall_clock::now();
  for (const auto& t : seen.temps)
    if (now - t.mtime > stale_temp_age) unlink_if_unchanged(seen, t, error);
  if (max_bytes_ == 0) return removed;
  std::uint64_t total = 0;
  for (const auto& f : seen.entries) total += f.bytes;
  if (total <= max_bytes_) return removed;
  const auto target = max_bytes_ - max_bytes_ / 10;
  std::sort(seen.entries.begin(), seen.entries.end(), [](const file_seen& a, const file_seen& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.key < b.key;
  });
  for (const auto& f : seen.entries) {
    if (total <= target) break;
    // One used or rewritten since the scan is not least recently used any more: keep it.
    const auto outcome = unlink_if_unchanged(seen, f, error);
    if (outcome == removal_outcome::removed) {
      ++removed.entries;
      removed.bytes += f.bytes;
    }
    if (outcome != removal_outcome::kept) total -= f.bytes;
  }
  return removed;
}

}  // namespace arun::io
