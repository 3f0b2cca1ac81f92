#include "trust/trust_store.hpp"

#include "files/json_text.hpp"
#include "files/private_files.hpp"

#include <boost/json/object.hpp>
#include <fmt/format.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace arun::io {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t max_store_bytes = 4 << 20;

// The entries of a parsed store; false when its shape is not the one write_trust_store writes.
bool read_entries(const boost::json::value& doc, trust_store& store) {
  const auto* root = doc.if_object();
  const auto* files = root ? root->if_contains("files") : nullptr;
  if (!files || !files->is_object()) return false;
  for (const auto& [path, entry] : files->get_object()) {
    if (!entry.is_object()) return false;
    trusted_file f{string_member(entry.get_object(), "sha256"), string_member(entry.get_object(), "trusted_at")};
    if (f.sha256.size() != 64) return false;
    store.files[std::string(path)] = std::move(f);
  }
  return true;
}

}  // namespace

std::string user_config_dir() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return std::string(xdg) + "/arun";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.config/arun";
  return {};
}

std::string trust_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

trust_store read_trust_store(std::string path) {
  trust_store store;
  if (path.empty()) {
    const auto dir = user_config_dir();
    if (dir.empty()) {
      store.error = "no config directory to keep trust in (set HOME or XDG_CONFIG_HOME)";
      return store;
    }
    path = dir + "/trusted.json";
  }
  store.path = path;
  // The root of trust is checked like the files it vouches for: a store another user could
  // have written vouches for nothing.
  const auto file = inspect_file(path, max_store_bytes);
  if (!file.present) return store;
  if (!file.error.empty() || !file.refusal.empty()) {
    store.error = file.error.empty() ? file.refusal : file.error;
    return store;
  }
  boost::system::error_code ec;
  const auto doc = parse_json_text(file.content, ec);
  if (ec || !read_entries(doc, store)) {
    store.files.clear();
    store.error = fmt::format("{} is not a trust record arun wrote{}", path, ec ? ": " + ec.message() : std::string());
  }
  return store;
}

bool write_trust_store(const trust_store& store, std::string& error) {
  std::error_code ec;
  const auto dir = fs::path(store.path).parent_path().string();
  if (!make_private_directories(dir, ec)) {
    error = fmt::format("cannot create {}: {}", dir, ec.message());
    return false;
  }
  // A directory someone else can write is no place for the root of trust: they could plant
  // what the write goes through, and a record there is never believed anyway.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    error = fmt::format("cannot examine {}: {}", dir, std::strerror(errno));
    return false;
  }
  if (const auto problem = ownership_problem("the directory " + dir, st); !problem.empty()) {
    error = fmt::format("not writing the trust record {}: {} (chown it to you, chmod go-w)", store.path, problem);
    return false;
  }
  boost::json::object files;
  for (const auto& [path, f] : store.files)
    files[path] = boost::json::object{{"sha256", f.sha256}, {"trusted_at", f.trusted_at}};
  const boost::json::object doc{{"version", 1}, {"files", std::move(files)}};
  if (!replace_private_file(store.path, to_json_text(doc) + "\n")) {
    error = fmt::format("cannot write {}: {}", store.path, std::strerror(errno));
    return false;
  }
  return true;
}

trust_verdict judge_trust(const inspected_file& file, const trust_store& store) {
  if (!file.refusal.empty()) return {trust_state::refused, "cannot be trusted (" + file.refusal + ")"};
  if (!store.error.empty()) return {trust_state::unknown, "is not trusted (" + store.error + ")"};
  const auto found = store.files.find(file.real_path);
  if (found == store.files.end()) return {trust_state::never_trusted, "is not trusted"};
  if (found->second.sha256 != file.sha256) return {trust_state::changed, "changed since it was trusted"};
  return {trust_state::trusted, "is trusted"};
}

}  // namespace arun::io
