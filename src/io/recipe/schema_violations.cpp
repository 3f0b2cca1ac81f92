#include "recipe/schema_violations.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace arun::io {
namespace {

// The lines valijson adds on the way out of a nested failure say nothing of their own: the
// errors of the nested value (or of the branch taken) are reported with them.
bool wrapper(const std::string& description) {
  return description.starts_with("Failed to validate against schema associated with property") ||
         description.starts_with("Failed to validate item #") ||
         description.starts_with("Failed to validate against child schema #") ||
         description.starts_with("Failed to validate against a conditional schema");
}

}  // namespace

std::vector<std::string> path_of(const std::vector<std::string>& context) {
  std::vector<std::string> path;
  for (const auto& part : context)
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') path.push_back(part.substr(1, part.size() - 2));
  return path;
}

std::string violation_phrase(std::string text) {
  while (!text.empty() && (text.back() == '.' || text.back() == ' ')) text.pop_back();
  // An acronym ("JSON value ...") keeps its capitals.
  if (text.size() > 1 && !std::isupper(static_cast<unsigned char>(text[1])))
    text.front() = static_cast<char>(std::tolower(static_cast<unsigned char>(text.front())));
  // valijson prints numbers with std::to_string: "less than or equal to 10.000000".
  for (auto dot = text.find('.'); dot != std::string::npos; dot = text.find('.', dot + 1)) {
    if (dot == 0 || !std::isdigit(static_cast<unsigned char>(text[dot - 1]))) continue;
    auto end = dot + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end - dot != 7) continue;  // std::to_string's six decimals
    auto keep = end;
    while (keep > dot + 1 && text[keep - 1] == '0') --keep;
    if (keep == dot + 1) keep = dot;
    text.erase(keep, end - keep);
  }
  return text;
}

std::vector<schema_violation> collect_violations(const std::vector<schema_error>& errors, violation_places places) {
  // Every strict prefix of a path with an error: an error there encloses another. (A set, not
  // a comparison of every pair: a list of 100,000 bad items gives as many errors.)
  std::set<std::vector<std::string>> enclosing;
  for (const auto& error : errors)
    for (std::size_t n = 0; n < error.first.size(); ++n)
      enclosing.emplace(error.first.begin(), error.first.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<schema_violation> out;
  std::map<std::vector<std::string>, std::size_t> index;  // path -> its entry in out
  std::map<std::vector<std::string>, std::string> wrapped;  // path -> a wrapper line said there
  for (const auto& [path, description] : errors) {
    if (places == violation_places::innermost && enclosing.contains(path)) continue;
    if (wrapper(description)) {
      wrapped.emplace(path, violation_phrase(description));
      if (places == violation_places::every) continue;  // a place of its own only with an error of its own
    }
    auto [it, added] = index.emplace(path, out.size());
    if (added) out.push_back(schema_violation{path, ""});
    auto& v = out[it->second];
    if (wrapper(description)) continue;
    // Alternatives (anyOf, oneOf) each say why they failed: keep a few, in order.
    const auto text = violation_phrase(description);
    if (v.message.find(text) != std::string::npos) continue;
    if (std::count(v.message.begin(), v.message.end(), ';') >= 3) continue;
    v.message += (v.message.empty() ? "" : "; or ") + text;
  }
  // A failure only a wrapper line tells of (a `false` schema for a property or an item).
  if (places == violation_places::every)
    for (const auto& [path, text] : wrapped)
      if (!index.contains(path) && !enclosing.contains(path)) {
        index.emplace(path, out.size());
        out.push_back(schema_violation{path, text});
      }
  for (auto& v : out)
    if (v.message.empty()) v.message = "it matches none of the forms the schema allows";
  return out;
}

}  // namespace arun::io
