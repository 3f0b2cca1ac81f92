// `arun cache list|clear`: what the content-keyed cache of step outputs holds (steps with
// `cache:`), and removing some or all of it. The entries themselves are the io layer's
// (cache/result_store.hpp); this is how a person or a script sees them.
#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance_glob.hpp"
#include "run_output.hpp"

#include "cache/age.hpp"
#include "cache/result_store.hpp"
#include "files/json_text.hpp"
#include "output/event_json.hpp"
#include "output/result_format.hpp"
#include "output/value_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace arun::cli {
namespace {

using wall_clock = std::chrono::system_clock;

// The directory to read, or "" after saying why it is refused (another user could write it).
std::string cache_dir_of(const cache_settings& s) {
  auto dir = io::checked_cache_dir(s.cache_dir);
  if (dir.ok()) return dir.path;
  std::fprintf(stderr, "arun: %s\n", dir.error.c_str());
  return {};
}

// `1.2 MB`, `512 B`: sizes as a person reads them.
std::string size_text(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

// `3m`, `2h`, `5d`: how long ago.
std::string age_text(wall_clock::time_point t, wall_clock::time_point now) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - t).count();
  if (s < 60) return fmt::format("{}s", std::max<long long>(s, 0));
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

// The entries the filters pick; `why` set when the cache cannot be read or an age is bad.
struct selection {
  std::vector<io::result_store::entry_info> entries;
  std::string why;
};

bool picked(const cache_settings& s, const io::result_store::entry_info& e, std::optional<std::chrono::seconds> age,
            wall_clock::time_point now) {
  if (!s.recipe.empty() && e.recipe != s.recipe) return false;
  // A step id picks all its instances (`fan` picks `fan[3]`), as --refresh-cache does.
  auto step_id = std::string_view(e.instance).substr(e.instance.rfind('/') + 1);
  step_id = step_id.substr(0, step_id.find('['));
  if (!s.steps.empty() && std::none_of(s.steps.begin(), s.steps.end(), [&](const std::string& g) {
        return instance_glob_match(g, e.instance) || g == step_id;
      }))
    return false;
  return !age || now - e.last_used >= *age;
}

}  // namespace

int cache_list(const cache_settings& s) {
  const auto dir = cache_dir_of(s);
  if (dir.empty()) return exit_usage;
  io::result_store store(dir, 0);
  std::string error;
  auto all = store.list(error);
  if (!error.empty()) {
    std::fprintf(stderr, "arun: cannot read the cache %s: %s\n", dir.c_str(), error.c_str());
    return exit_usage;
  }
  const auto now = wall_clock::now();
  std::vector<io::result_store::entry_info> shown;
  for (auto& e : all)
    if (picked(s, e, std::nullopt, now)) shown.push_back(std::move(e));
  std::uint64_t bytes = 0;
  for (const auto& e : shown) bytes += e.bytes;
  if (s.output_format == "json") {
    auto doc = io::document_header();
    doc["dir"] = dir;
    doc["bytes"] = bytes;
    boost::json::array entries;
    for (const auto& e : shown) {
      boost::json::object o;
      o["key"] = e.key;
      o["recipe"] = e.recipe;
      o["instance"] = e.instance;
      o["session"] = e.session;
      o["bytes"] = e.bytes;
      o["created"] = io::format_rfc3339_ms(e.created);
      o["last_used"] = io::format_rfc3339_ms(e.last_used);
      o["duration"] = std::chrono::duration<double>(e.duration).count();
      o["damaged"] = e.damaged;
      entries.push_back(std::move(o));
    }
    doc["entries"] = std::move(entries);
    return write_stdout(io::to_json_text(doc) + "\n") ? exit_success : exit_output_failed;
  }
  std::string text;
  if (!shown.empty()) {
    text += fmt::format("{:<12}  {:>7}  {:>9}  {:>9}  {:<20}  {}\n", "KEY", "AGE", "LAST USED", "SIZE", "RECIPE",
                        "INSTANCE");
    for (const auto& e : shown)
      text += fmt::format("{:<12}  {:>7}  {:>9}  {:>9}  {:<20}  {}{}\n", e.key.substr(0, 12), age_text(e.created, now),
                          age_text(e.last_used, now), size_text(e.bytes), e.recipe, e.instance,
                          e.damaged ? "  (damaged: arun cache clear removes it)" : "");
  }
  text += fmt::format("{} cached output{}, {} in {}\n", io::thousands(shown.size()), shown.size() == 1 ? "" : "s",
                      size_text(bytes), dir);
  return write_stdout(text) ? exit_success : exit_output_failed;
}

int cache_clear(const cache_settings& s) {
  std::optional<std::chrono::seconds> age;
  if (!s.older_than.empty()) {
    std::string why;
    age = io::parse_age(s.older_than, why);
    if (!age) {
      std::fprintf(stderr, "arun: --older-than %s\n", why.c_str());
      return exit_usage;
    }
  }
  const auto dir = cache_dir_of(s);
  if (dir.empty()) return exit_usage;
  io::result_store store(dir, 0);
  const auto now = wall_clock::now();
  std::string error;
  const auto doomed = [&](const io::result_store::entry_info& e) { return picked(s, e, age, now); };
  io::result_store::removal removed;
  if (s.dry_run) {
    for (const auto& e : store.list(error))
      if (doomed(e)) ++removed.entries, removed.bytes += e.bytes;
  } else {
    removed = store.remove_if(doomed, error);
  }
  for (const auto& refused : removed.refused) std::fprintf(stderr, "arun: warning: %s\n", refused.c_str());
  if (!error.empty()) {
    std::fprintf(stderr, "arun: cannot clear the cache %s: %s\n", dir.c_str(), error.c_str());
    return exit_usage;
  }
  const auto text = fmt::format("{} {} cached output{} ({}) from {}\n", s.dry_run ? "would remove" : "removed",
                                io::thousands(removed.entries), removed.entries == 1 ? "" : "s",
                                size_text(removed.bytes), dir);
  return write_stdout(text) ? exit_success : exit_output_failed;
}

}  // namespace arun::cli
