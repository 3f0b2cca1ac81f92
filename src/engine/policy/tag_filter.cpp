#include "policy/tag_filter.hpp"

#include <algorithm>

namespace arun::engine {

namespace {

bool contains(const std::vector<std::string>& list, const std::string& tag) {
  return std::find(list.begin(), list.end(), tag) != list.end();
}

// The first of `when_tags` found in `exclude`, or null.
const std::string* excluded_tag(const std::vector<std::string>& when_tags, const std::vector<std::string>& exclude) {
  for (const auto& tag : when_tags)
    if (contains(exclude, tag)) return &tag;
  return nullptr;
}

bool any_included(const std::vector<std::string>& when_tags, const std::vector<std::string>& include) {
  if (include.empty()) return true;
  return std::any_of(when_tags.begin(), when_tags.end(), [&](const std::string& t) { return contains(include, t); });
}

}  // namespace

bool tags_allow(const std::vector<std::string>& when_tags, const std::vector<std::string>& include,
                const std::vector<std::string>& exclude) {
  if (when_tags.empty()) return true;
  return excluded_tag(when_tags, exclude) == nullptr && any_included(when_tags, include);
}

std::optional<std::string> tag_skip_reason(const std::vector<std::string>& when_tags,
                                           const std::vector<std::string>& include,
                                           const std::vector<std::string>& exclude) {
  if (when_tags.empty()) return std::nullopt;
  if (const auto* tag = excluded_tag(when_tags, exclude)) return "tag '" + *tag + "' is excluded";
  if (any_included(when_tags, include)) return std::nullopt;
  std::string listed;
  for (const auto& tag : when_tags) {
    if (!listed.empty()) listed += ", ";
    listed += tag;
  }
  return "none of its tags (" + listed + ") is included";
}

}  // namespace arun::engine
