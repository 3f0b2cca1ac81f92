#include "executor/value_files.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace arun::io {

std::shared_ptr<const private_temp_file> value_files::file_for(std::string_view value, std::string_view prefix) {
  const auto hash = std::hash<std::string_view>{}(value);
  const std::lock_guard lock(mutex_);
  const auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second.value != value) continue;
    if (!unchanged(it->second)) {  // written again below, under a new name
      by_hash_.erase(it);
      break;
    }
    it->second.last_use = ++clock_;
    return it->second.file;
  }
  auto file = std::make_shared<const private_temp_file>(prefix, value, directory_);
  auto& added = by_hash_.emplace(hash, entry{std::string(value), file, ++clock_})->second;
  remember(added);
  trim();
  return file;
}

namespace {

std::int64_t nanoseconds(const struct timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

}  // namespace

void value_files::remember(entry& e) {
  struct stat st {};
  if (::stat(e.file->path().c_str(), &st) != 0) return;  // never matches: written again next time
  e.inode = st.st_ino;
  e.size = static_cast<std::uint64_t>(st.st_size);
  e.mtime_ns = nanoseconds(st.st_mtim);
}

bool value_files::unchanged(const entry& e) {
  struct stat st {};
  return ::stat(e.file->path().c_str(), &st) == 0 && st.st_ino == e.inode &&
         static_cast<std::uint64_t>(st.st_size) == e.size && nanoseconds(st.st_mtim) == e.mtime_ns &&
         e.size == e.value.size();
}

std::size_t value_files::files() const {
  const std::lock_guard lock(mutex_);
  return by_hash_.size();
}

void value_files::trim() {
  // Files only this store holds: the steps that used them have ended.
  std::vector<decltype(by_hash_)::iterator> unused;
  std::size_t unused_bytes = 0;
  for (auto it = by_hash_.begin(); it != by_hash_.end(); ++it)
    if (it->second.file.use_count() == 1) {
      unused.push_back(it);
      unused_bytes += it->second.value.size();
    }
  if (unused_bytes <= keep_bytes_) return;
  std::sort(unused.begin(), unused.end(), [](auto a, auto b) { return a->second.last_use < b->second.last_use; });
  for (auto it : unused) {  // the least recently used first
    if (unused_bytes <= keep_bytes_) break;
    unused_bytes -= it->second.value.size();
    by_hash_.erase(it);
  }
}

}  // namespace arun::io
