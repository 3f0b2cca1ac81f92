#include "session/session_outputs.hpp"

#include "files/private_files.hpp"
#include "session/stored_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace arun::io {
namespace {

// The highest <n> of the files an earlier run of the session stored, so numbers never repeat.
std::size_t highest_number(const std::string& dir) {
  std::size_t highest = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      unsigned long n = 0;
      if (std::sscanf(e->d_name, "%lu-", &n) == 1) highest = std::max<std::size_t>(highest, n);
    }
    ::closedir(d);
  }
  return highest;
}

}  // namespace

session_outputs::session_outputs(session_store& store, std::size_t threshold)
    : store_(store), threshold_(threshold), dir_(store.dir() + "/outputs"), next_(highest_number(dir_)) {}

session_outputs::~session_outputs() { store_.flush(); }

std::optional<std::string> session_outputs::store(std::string_view instance, std::string text) {
  // Secrets are never kept in the session; masked, the value would change for the steps that
  // read it back. Such an output stays in memory.
  if (store_.masked(text) != text) return std::nullopt;
  auto name = std::to_string(++next_) + "-" + file_name_part(instance.substr(0, 80)) + ".txt";
  auto path = dir_ + "/" + name;
  auto* writer = store_.writer();
  if (writer == nullptr) {
    write(name, path, text);
    return name;
  }
  {
    std::lock_guard lock(mutex_);
    queued_.insert(name);
  }
  const auto size = text.size();
  writer->post(size, [this, name, path, text = std::move(text)] { write(name, path, text); });
  return name;
}

void session_outputs::write(const std::string& name, const std::string& path, const std::string& text) noexcept {
  if (!dir_made_) dir_made_ = ::mkdir(dir_.c_str(), 0700) == 0 || errno == EEXIST;  // on the writer's thread
  // Atomically: a crash mid-write leaves no half output under the name a record may name.
  auto failure = write_file_atomically(path, text);
  {
    std::lock_guard lock(mutex_);
    queued_.erase(name);
  }
  // Like a journal record that cannot be written: the run stops, resume runs it again.
  if (!failure.empty()) store_.report_failure(failure);
}

std::optional<std::string> session_outputs::load(std::string_view file, std::uint64_t bytes, std::string& why) {
  const std::string name(file);
  bool queued = false;
  {
    std::lock_guard lock(mutex_);
    queued = queued_.contains(name);
  }
  if (queued) store_.flush();  // stored moments ago: wait for its write
  return read_stored_file(dir_, name, bytes, why);
}

}  // namespace arun::io
