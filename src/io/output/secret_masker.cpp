#include "output/secret_masker.hpp"

#include "output/secret_forms.hpp"

#include <boost/json/object.hpp>

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
  for (auto& form : secret_forms(value, min_line_bytes)) add_pattern(std::move(form));
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

std::size_t secret_masker::safe_cut(std::string_view text, std::size_t at) const noexcept {
  at = std::min(at, text.size());
  // Moving the cut back can put it inside an earlier occurrence: look again until none straddles.
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& p : patterns_) {
      const auto from = at >= p.size() ? at - p.size() + 1 : 0;
      const auto hit = text.find(p, from);
      if (hit != std::string_view::npos && hit < at && hit + p.size() > at) {
        at = hit;
        moved = true;
      }
    }
  }
  return at;
}

std::size_t secret_masker::safe_start(std::string_view text, std::size_t at) const noexcept {
  at = std::min(at, text.size());
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& p : patterns_) {
      // The last occurrence that begins before `at`, if it ends after it.
      if (at == 0) break;
      const auto hit = text.rfind(p, at - 1);
      if (hit != std::string_view::npos && hit + p.size() > at) {
        at = hit + p.size();
        moved = true;
      }
    }
  }
  return at;
}

void secret_masker::mask_json(boost::json::value& v) const {
  if (patterns_.empty()) return;
  if (auto* s = v.if_string()) {
    if (!clean(*s)) *s = mask(*s);
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) mask_json(item);
  } else if (auto* o = v.if_object()) {
    bool keys_clean = true;
    for (auto& kv : *o) {
      mask_json(kv.value());
      keys_clean = keys_clean && clean(kv.key());
    }
    if (keys_clean) return;
    // A secret printed as a key (`{"TOKEN": 1}`) is as much a secret as one printed as a value.
    boost::json::object masked(o->storage());
    masked.reserve(o->size());
    for (auto& kv : *o) {
      auto key = mask(kv.key());
      for (int n = 2; masked.contains(key); ++n) key = mask(kv.key()) + "#" + std::to_string(n);
      masked.emplace(key, std::move(kv.value()));
    }
    *o = std::move(masked);
  }
}

}  // namespace arun::io
