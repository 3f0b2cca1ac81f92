#include "session/session_lookup.hpp"

#include "session/session_store.hpp"

#include "files/owned_tree.hpp"
#include "output/event_json.hpp"
#include "output/terminal_text.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <system_error>
#include <variant>

namespace arun::io {
namespace {

namespace fs = std::filesystem;
using time_point = std::chrono::system_clock::time_point;

// The `YYYYMMDD-HHMMSS` an arun-made id begins with: the UTC second the session was created.
constexpr std::size_t id_second_length = 15;
constexpr std::size_t ambiguity_listed = 10;

bool digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// When the session says it was created: `created` of origin.json (small, written once), else
// of state.json; the earliest time when neither says (a session being made, or damaged).
time_point created_of(const std::string& root, const std::string& id) {
  auto opened = owned_dir::open(root + "/" + id);
  auto* dir = std::get_if<owned_dir>(&opened);
  if (!dir) return time_point::min();
  for (const auto& [file, limit] : {std::pair{"origin.json", std::size_t{1} << 20}, {"state.json", std::size_t{16} << 20}}) {
    std::string why;
    const auto text = dir->read_file(file, limit, why);
    if (!text) continue;
    boost::system::error_code ec;
    const auto v = boost::json::parse(*text, ec);
    const auto* created = !ec && v.is_object() ? v.get_object().if_contains("created") : nullptr;
    if (created && created->is_string())
      if (const auto t = parse_rfc3339_ms(created->get_string())) return *t;
  }
  return time_point::min();
}

}  // namespace

bool arun_made_id(std::string_view id) {
  return id.size() == 22 && digits(id.substr(0, 8)) && id[8] == '-' && digits(id.substr(9, 6)) && id[15] == '-' &&
         std::all_of(id.begin() + 16, id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::vector<std::string> session_ids(const std::string& root) {
  std::vector<std::string> ids;
  std::error_code ec;
  // Real directories only: a symlink in the root leads elsewhere, and is no session arun made.
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory(ec) && !entry.is_symlink(ec))
      if (auto name = entry.path().filename().string(); valid_session_id(name)) ids.push_back(std::move(name));
  // arun's ids first, newest first by the second they name; the rest after them.
  std::sort(ids.begin(), ids.end(), [](const std::string& a, const std::string& b) {
    const bool ours_a = arun_made_id(a), ours_b = arun_made_id(b);
    return ours_a != ours_b ? ours_a : a > b;
  });
  // Sessions of the same second: by the creation time they record (read only for them).
  for (auto first = ids.begin(); first != ids.end();) {
    auto last = first + 1;
    if (arun_made_id(*first))
      while (last != ids.end() && arun_made_id(*last) && last->compare(0, id_second_length, *first, 0, id_second_length) == 0)
        ++last;
    if (last - first > 1) {
      std::vector<std::pair<time_point, std::string>> dated;
      for (auto it = first; it != last; ++it) dated.emplace_back(created_of(root, *it), std::move(*it));
      std::sort(dated.begin(), dated.end(), std::greater<>());
      for (auto& [created, id] : dated) *first++ = std::move(id);
    }
    first = last;
  }
  return ids;
}

session_match match_session(std::string_view given, const std::vector<std::string>& ids) {
  session_match out;
  if (given == "last" || given == "-") {
    if (const auto newest = std::find_if(ids.begin(), ids.end(), [](const auto& id) { return arun_made_id(id); });
        newest != ids.end())
      out.id = *newest;
    return out;
  }
  if (!valid_session_id(given)) return out;
  if (std::find(ids.begin(), ids.end(), given) != ids.end()) {
    out.id = given;
    return out;
  }
  for (const auto& id : ids)
    if (id.starts_with(given) || id.ends_with(given)) out.candidates.push_back(id);
  if (out.candidates.size() == 1) {
    out.id = std::move(out.candidates.front());
    out.candidates.clear();
  }
  return out;
}

session_lookup find_session(const std::string& root, std::string_view given) {
  const auto match = match_session(given, session_ids(root));
  if (!match.id.empty()) return {match.id, {}};
  // The argument is shown escaped: no terminal control sequence reaches the terminal.
  const std::string quoted = "'" + printable_text(given) + "'";
  if (match.candidates.empty()) return {{}, "no session " + quoted + " in " + root + " (arun sessions lists them)"};
  std::string listed;
  for (std::size_t i = 0; i < match.candidates.size() && i < ambiguity_listed; ++i)
    listed += (i ? ", " : "") + match.candidates[i];
  if (match.candidates.size() > ambiguity_listed)
    listed += ", ... (" + std::to_string(match.candidates.size() - ambiguity_listed) + " more)";
  return {{}, quoted + " matches " + std::to_string(match.candidates.size()) + " sessions in " + root + ": " + listed +
                  " (give more of the id)"};
}

}  // namespace arun::io
