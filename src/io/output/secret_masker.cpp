#include "output/secret_masker.hpp"

#include "files/json_text.hpp"

#include <algorithm>

namespace arun::io {

void secret_masker::add_pattern(std::string pattern) {
  if (pattern.empty() || std::find(patterns_.begin(), patterns_.end(), pattern) != patterns_.end()) return;
  const auto at = std::find_if(patterns_.begin(), patterns_.end(),
                               [&](const std::string& p) { return p.size() < pattern.size(); });
  patterns_.insert(at, std::move(pattern));
}

void secret_masker::add(std::string_view value) {
  if (value.empty()) return;
  add_pattern(std::string(value));
  // Inside JSON text: the string's escaped form, without its quotes.
  const auto quoted = to_json_text(boost::json::value(boost::json::string(value)));
  if (quoted.size() >= 2) add_pattern(quoted.substr(1, quoted.size() - 2));
  // A multi-line value reaches line-based output one line at a time.
  if (value.find('\n') != std::string_view::npos) {
    std::size_t start = 0;
    while (start <= value.size()) {
      const auto end = std::min(value.find('\n', start), value.size());
      auto line = value.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      // Blank or one-character lines would mask ordinary text everywhere.
      if (line.find_first_not_of(" \t") != std::string_view::npos && line.size() >= 2) add_pattern(std::string(line));
      start = end + 1;
    }
  }
}

bool secret_masker::clean(std::string_view text) const {
  return std::none_of(patterns_.begin(), patterns_.end(),
                      [&](const std::string& p) { return text.find(p) != std::string_view::npos; });
}

std::string secret_masker::mask(std::string_view text) const {
  if (clean(text)) return std::string(text);
  std::string out(text);
  for (const auto& p : patterns_) {
    std::string next;
    std::size_t from = 0;
    for (auto at = out.find(p); at != std::string::npos; at = out.find(p, from)) {
      next.append(out, from, at - from);
      next += mask_text;
      from = at + p.size();
    }
    if (from == 0) continue;
    next.append(out, from);
    out = std::move(next);
  }
  return out;
}

void secret_masker::mask_json(boost::json::value& v) const {
  if (patterns_.empty()) return;
  if (auto* s = v.if_string()) {
    if (!clean(*s)) *s = mask(*s);
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) mask_json(item);
  } else if (auto* o = v.if_object()) {
    // Values only: keys are names (of variables, of arun's own fields), and a document whose
    // keys were rewritten could no longer be read back.
    for (auto& kv : *o) mask_json(kv.value());
  }
}

}  // namespace arun::io
