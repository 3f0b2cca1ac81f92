#include "output/diagnostic_render.hpp"

#include "recipe/recipe_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <tuple>

namespace arun::io {
namespace {

constexpr const char* style_reset = "\x1b[0m";

struct styles {
  bool on;
  std::string paint(std::string_view text, const char* code) const {
    return on ? std::string(code) + std::string(text) + style_reset : std::string(text);
  }
};

// The byte range of 1-based line `line` in `text`, without its line break.
std::optional<std::pair<std::size_t, std::size_t>> line_range(const std::string& text, std::size_t line) {
  if (line == 0) return std::nullopt;
  std::size_t begin = 0;
  for (std::size_t n = 1; n < line; ++n) {
    begin = text.find('\n', begin);
    if (begin == std::string::npos) return std::nullopt;
    ++begin;
  }
  if (begin > text.size()) return std::nullopt;
  auto end = text.find('\n', begin);
  if (end == std::string::npos) end = text.size();
  if (end > begin && text[end - 1] == '\r') --end;
  return std::pair{begin, end};
}

bool continuation_byte(unsigned char c) { return (c & 0xC0) == 0x80; }

// What the line looks like on a terminal (tabs as four spaces, other control characters as
// their visible symbols: a NUL is ␀, never a raw byte), and the display column of each byte
// offset in it (code points, not bytes).
struct shown_line {
  std::string text;
  std::vector<std::size_t> column_of;  // byte offset -> display column; one past the end too
};

shown_line show(std::string_view line) {
  shown_line out;
  std::size_t column = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    out.column_of.push_back(column);
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == '\t') {
      out.text += "    ";
      column += 4;
    } else if (c < 0x20 || c == 0x7f) {
      // U+2400 + c (␀ ␁ …), U+2421 for DEL: one column each.
      const unsigned symbol = c == 0x7f ? 0x2421 : 0x2400 + c;
      out.text += static_cast<char>(0xE0 | (symbol >> 12));
      out.text += static_cast<char>(0x80 | ((symbol >> 6) & 0x3F));
      out.text += static_cast<char>(0x80 | (symbol & 0x3F));
      ++column;
    } else {
      out.text.push_back(line[i]);
      if (!continuation_byte(c)) ++column;
    }
  }
  out.column_of.push_back(column);
  return out;
}

// How many bytes to underline from `at` when the diagnostic does not say: a quoted scalar to
// its closing quote, a plain value after `key: ` to the end of the line (without a comment),
// else the run of non-blank characters (a key without its colon).
std::size_t token_bytes(std::string_view line, std::size_t at) {
  if (at >= line.size()) return 0;
  if (line[at] == '"' || line[at] == '\'') {
    const auto close = line.find(line[at], at + 1);
    return close == std::string_view::npos ? line.size() - at : close + 1 - at;
  }
  if (line[at] == '[' || line[at] == '{') {  // a flow collection: to its closing bracket
    int depth = 0;
    for (auto i = at; i < line.size(); ++i) {
      if (line[i] == '[' || line[i] == '{') ++depth;
      if ((line[i] == ']' || line[i] == '}') && --depth == 0) return i + 1 - at;
    }
    return line.size() - at;
  }
  const bool value = at >= 2 && line.substr(at - 2, 2) == ": " && line[at] != '|' && line[at] != '>';
  // Inside a flow collection (`{cpus: 0, mem: 4GB}`) a plain value ends at the next ',', '}' or ']'.
  int open = 0;
  for (std::size_t i = 0; i < at; ++i) open += line[i] == '{' || line[i] == '[' ? 1 : line[i] == '}' || line[i] == ']' ? -1 : 0;
  if (value && open > 0) {
    const auto end = line.find_first_of(",}]", at);
    auto stop = end == std::string_view::npos ? line.size() : end;
    while (stop > at && (line[stop - 1] == ' ' || line[stop - 1] == '\t')) --stop;
    return std::max<std::size_t>(stop - at, 1);
  }
  if (value) {
    auto end = line.find(" #", at);
    if (end == std::string_view::npos) end = line.size();
    while (end > at && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
    return std::max<std::size_t>(end - at, 1);
  }
  std::size_t end = at;
  auto key_colon = [&](std::size_t i) { return line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' '); };
  while (end < line.size() && line[end] != ' ' && line[end] != '\t' && !key_colon(end)) ++end;
  return std::max<std::size_t>(end - at, 1);
}

// Bytes covering `columns` code points from `at`.
std::size_t bytes_for_columns(std::string_view line, std::size_t at, std::size_t columns) {
  std::size_t end = at, seen = 0;
  while (end < line.size() && seen < columns) {
    ++end;
    while (end < line.size() && continuation_byte(static_cast<unsigned char>(line[end]))) ++end;
    ++seen;
  }
  return end - at;
}

std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !continuation_byte(static_cast<unsigned char>(c)); }));
}

// What a diagnostic underlines on its source line: the byte offset and length.
struct underline {
  std::size_t at, bytes;
};

underline underline_of(const diagnostic& d, std::string_view line) {
  const auto at = std::min(static_cast<std::size_t>(std::max(d.where.column - 1, 0)), line.size());
  return {at, d.span > 0 ? bytes_for_columns(line, at, d.span) : token_bytes(line, at)};
}

std::optional<std::string_view> source_line(const std::string* source, int line) {
  const auto range = source ? line_range(*source, static_cast<std::size_t>(std::max(line, 0))) : std::nullopt;
  if (!range) return std::nullopt;
  return std::string_view(source->data() + range->first, range->second - range->first);
}

void sort_by_position(std::vector<diagnostic>& ds) {
  std::stable_sort(ds.begin(), ds.end(), [](const diagnostic& a, const diagnostic& b) {
    return std::tie(a.where.file, a.where.line, a.where.column) < std::tie(b.where.file, b.where.line, b.where.column);
  });
}

}  // namespace

const std::string* source_files::text(const std::string& file) {
  auto it = cache_.find(file);
  if (it == cache_.end()) {
    std::optional<std::string> content;
    if (saved_) content = saved_->saved(file);
    if (!content) {
      std::ifstream in(file, std::ios::binary);
      if (in) content = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    it = cache_.emplace(file, std::move(content)).first;
  }
  return it->second ? &*it->second : nullptr;
}

void point_at_snippets(std::vector<diagnostic>& ds, source_files& files) {
  for (auto& d : ds) {
    if (d.snippet.empty()) continue;
    const auto* text = files.text(d.where.file);
    if (!text) continue;
    const auto range = line_range(*text, static_cast<std::size_t>(std::max(d.where.line, 0)));
    if (!range) continue;
    auto at = std::min(range->first + static_cast<std::size_t>(std::max(d.where.column - 1, 0)), range->second);
    // Only inside the value: its own line and the lines below indented deeper than that line
    // (a block scalar, a flow value's continuation) — or as deep, when the value is a mapping
    // that starts the line (env entries) — never a later key's text.
    const std::string_view first_line(text->data() + range->first, range->second - range->first);
    const auto indent = first_line.find_first_not_of(' ');
    const bool starts_line = indent != std::string_view::npos && indent + 1 == static_cast<std::size_t>(d.where.column);
    auto limit = range->second;
    while (limit < text->size()) {
      const auto next_begin = limit + 1;
      auto next_end = text->find('\n', next_begin);
      if (next_end == std::string::npos) next_end = text->size();
      const std::string_view next(text->data() + next_begin, next_end - next_begin);
      const auto next_indent = next.find_first_not_of(' ');
      const bool blank = next_indent == std::string_view::npos || next[next_indent] == '\r';
      if (!blank && (starts_line ? next_indent < indent : next_indent <= indent)) break;
      limit = next_end;
    }
    const std::string_view region(text->data(), limit);
    for (std::size_t n = 0;; ++n) {
      at = region.find(d.snippet, at);
      if (at == std::string::npos || n == d.occurrence) break;
      at += d.snippet.size();
    }
    if (at == std::string::npos) continue;  // written differently in the source: keep the value's start
    const auto line = static_cast<std::size_t>(std::count(text->begin(), text->begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
    const auto line_start = text->rfind('\n', at == 0 ? 0 : at - 1);
    const auto begin = at == 0 || line_start == std::string::npos ? 0 : line_start + 1;
    d.where.line = static_cast<int>(line);
    d.where.column = static_cast<int>(at - begin + 1);
    d.span = code_points(d.snippet);
  }
}

std::string render_diagnostic(const diagnostic& d, const std::string* source, bool color) {
  const styles s{color};
  const bool error = d.level == severity::error;
  const char* level_style = error ? "\x1b[1;31m" : "\x1b[1;33m";
  std::string out = d.where.file;
  if (d.where.line > 0) out += fmt::format(":{}:{}", d.where.line, d.where.column);
  out += ": " + s.paint(error ? "error" : "warning", level_style) + ": " + s.paint(d.message, "\x1b[1m") + "\n";
  const auto line = source_line(source, d.where.line);
  const std::string number = std::to_string(d.where.line);
  const std::string pad(number.size(), ' ');
  const auto gutter = [&](std::string_view mark) { return s.paint(std::string(pad) + " " + std::string(mark), "\x1b[1;34m"); };
  if (line) {
    const auto shown = show(*line);
    const auto [at, bytes] = underline_of(d, *line);
    const auto from = shown.column_of[at];
    const auto width = std::max<std::size_t>(shown.column_of[std::min(at + bytes, line->size())] - from, 1);
    out += gutter("|") + "\n";
    out += s.paint(number + " |", "\x1b[1;34m") + " " + shown.text + "\n";
    out += gutter("|") + " " + std::string(from, ' ') + s.paint(std::string(width, '^'), level_style) + "\n";
  }
  if (!d.hint.empty()) out += (line ? gutter("=") + " " : std::string()) + s.paint("help", "\x1b[1m") + ": " + d.hint + "\n";
  return out;
}

std::string render_diagnostics(std::vector<diagnostic> ds, source_files& files, bool color) {
  if (ds.empty()) return {};
  point_at_snippets(ds, files);
  sort_by_position(ds);
  std::string out;
  std::size_t errors = 0, warnings = 0;
  for (const auto& d : ds) {
    (d.level == severity::error ? errors : warnings)++;
    out += render_diagnostic(d, files.text(d.where.file), color);
  }
  auto count = [](std::size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); };
  std::string summary;
  if (errors > 0) summary = count(errors, "error");
  if (warnings > 0) summary += (summary.empty() ? "" : ", ") + count(warnings, "warning");
  out += summary + "\n";
  return out;
}

boost::json::object diagnostic_to_json(const diagnostic& d, const std::string* source) {
  boost::json::object o;
  o["file"] = d.where.file;
  const auto line = source_line(source, d.where.line);
  if (d.where.line > 0) {
    o["line"] = d.where.line;
    o["column"] = d.where.column;
    // Exclusive, in the columns `column` counts (bytes from 1): what the text form underlines.
    if (line) {
      const auto u = underline_of(d, *line);
      // A column past the line's end (a mark at the line break) still ends after itself.
      const auto from = std::max<std::size_t>(u.at, static_cast<std::size_t>(std::max(d.where.column - 1, 0)));
      o["end_column"] = static_cast<int>(from + std::max<std::size_t>(u.bytes, 1)) + 1;
    } else {
      o["end_column"] = d.where.column + static_cast<int>(std::max<std::size_t>(d.span, 1));
    }
  } else {
    for (const char* key : {"line", "column", "end_column"}) o[key] = nullptr;
  }
  o["severity"] = d.level == severity::error ? "error" : "warning";
  o["code"] = d.code.empty() ? "invalid-recipe" : d.code;
  o["message"] = d.message;
  o["help"] = d.hint.empty() ? boost::json::value(nullptr) : boost::json::value(d.hint);
  if (!d.key.empty()) o["key"] = d.key;
  return o;
}

boost::json::array diagnostics_to_json(std::vector<diagnostic> ds, source_files& files) {
  point_at_snippets(ds, files);
  sort_by_position(ds);
  boost::json::array out;
  for (const auto& d : ds) out.push_back(diagnostic_to_json(d, files.text(d.where.file)));
  return out;
}

}  // namespace arun::io
