#include "shell/shell_render.hpp"

#include "shell/context_export.hpp"
#include "shell/shell_lexer.hpp"

#include <algorithm>
#include <map>

namespace arun::engine {
namespace {

bool is_integer_literal(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_alnum(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// What can be part of a variable name: no subscript, no expansion.
bool is_name_text(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '_'; });
}

std::string replacement(shell_quoting q, const std::string& name) {
  const auto var = "${" + name + "}";
  switch (q) {
    case shell_quoting::double_quoted:
    case shell_quoting::heredoc: return var;
    case shell_quoting::single_quoted: return "'\"" + var + "\"'";
    case shell_quoting::ansi_c_quoted: return "'\"" + var + "\"$'";
    default: return "\"" + var + "\"";
  }
}

// Why a reference cannot be rewritten where it is; empty when it can.
std::string position_error(const shell_position& p, const reference& ref, std::string_view stopped) {
  const auto r = ref.braced();
  if (p.quoting == shell_quoting::unknown) return "cannot tell how bash reads " + r + ": " + std::string(stopped);
  if (p.quoting == shell_quoting::heredoc_delimiter) return r + " cannot be part of a heredoc delimiter";
  if (p.escaped) return r + " follows a backslash that would escape the rewritten reference: remove the backslash";
  if (p.after_dollar) return r + " directly follows '$', which bash would join with the rewritten reference";
  if (p.quoting == shell_quoting::quoted_heredoc && p.in_backticks)
    return r + " is in a quoted heredoc inside backticks, where bash re-reads backslashes and backticks: use $( ) instead";
  if (p.code) return code_position_error(p.code_in, ref) + " (" + code_position_hint(ref) + ")";
  return {};
}

std::string value_error(const shell_position& p, const reference& ref, std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return "the value of " + ref.braced() + " holds a NUL byte, which bash cannot receive";
  if (p.arithmetic && !is_integer_literal(text))
    return ref.braced() + " is in an arithmetic position, where bash would evaluate its value as code: the value must be an integer literal";
  if (p.name && !is_name_text(text))
    return ref.braced() + " is in a variable-name position, where bash would evaluate a subscript in its value as code: the value "
           "may hold only letters, digits and '_'";
  return {};
}

// One variable per distinct reference, with a unique name.
class variable_names {
public:
  const std::string& assign(const reference& ref, std::string value, std::vector<shell_variable>& vars) {
    auto key = ref.text();
    if (const auto it = by_ref_.find(key); it != by_ref_.end()) return it->second;
    const auto base = shell_variable_name(ref);
    auto name = base;
    for (int n = 2; used_.contains(name); ++n) name = base + "_" + std::to_string(n);
    used_.insert(name);
    vars.push_back({name, std::move(value)});
    return by_ref_.emplace(std::move(key), std::move(name)).first->second;
  }

private:
  std::map<std::string, std::string> by_ref_;
  name_set used_;
};

// Where original offsets land in the output: after each rewritten reference, the output
// offset that matches the reference's original end.
class offset_map {
public:
  void add(std::size_t original_end, std::size_t output_end) { anchors_.emplace_back(original_end, output_end); }
  std::size_t operator()(std::size_t original) const {
    auto it = std::upper_bound(anchors_.begin(), anchors_.end(), std::pair(original, static_cast<std::size_t>(-1)));
    if (it == anchors_.begin()) return original;
    --it;
    return it->second + (original - it->first);
  }

private:
  std::vector<std::pair<std::size_t, std::size_t>> anchors_;
};

// A value inlined into a quoted heredoc must not contain the line that ends it.
std::string check_heredoc(const heredoc_body& h, std::string_view body, const reference& first) {
  while (!body.empty()) {
    const auto nl = body.find('\n');
    auto line = body.substr(0, nl);
    body.remove_prefix(nl == std::string_view::npos ? body.size() : nl + 1);
    if (h.strip_tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
    if (line == h.delimiter)
      return "a value inlined into the quoted heredoc '" + h.delimiter + "' (at " + first.braced() +
             ") contains its delimiter line, which would end the heredoc early";
  }
  return {};
}

// `<<-` strips leading tabs from every body line, also from lines an inlined value brings.
bool loses_tabs(std::string_view script_so_far, std::string_view value) {
  if (value.find("\n\t") != std::string_view::npos) return true;
  if (!value.starts_with('\t')) return false;
  const auto line_start = script_so_far.rfind('\n') + 1;  // npos + 1 == 0
  return script_so_far.find_first_not_of('\t', line_start) == std::string_view::npos;
}

// One rendering: the script so far, the variables, and what the heredoc check needs.
class shell_renderer {
public:
  shell_renderer(std::string_view command, const render_scope& scope)
      : command_(command), scope_(scope), spans_(find_references(command)) {
    std::vector<text_range> ranges;
    for (const auto& s : spans_) ranges.push_back({s.begin, s.end});
    lexed_ = lex_shell(command, ranges);
  }

  rendered_shell run() && {
    std::size_t copied = 0;
    for (std::size_t k = 0; k < spans_.size() && out_.ok(); ++k) {
      out_.script.append(command_.substr(copied, spans_[k].begin - copied));
      copied = spans_[k].end;
      out_.error = rewrite(spans_[k], lexed_.positions[k]);
    }
    if (!out_.ok()) return std::move(out_);
    out_.script.append(command_.substr(copied));
    for (const auto& [index, first] : inlined_) {
      const auto& h = lexed_.heredocs[index];
      const auto begin = offsets_(h.body.begin);
      const auto body = std::string_view(out_.script).substr(begin, offsets_(h.body.end) - begin);
      out_.error = check_heredoc(h, body, *first);
      if (!out_.ok()) break;
    }
    return std::move(out_);
  }

private:
  // Appends the rewritten reference; returns an error instead when it cannot be made safe.
  std::string rewrite(const reference_span& span, const shell_position& pos) {
    if (pos.quoting == shell_quoting::comment) {
      out_.script.append(command_.substr(span.begin, span.end - span.begin));
      return {};
    }
    if (auto e = position_error(pos, span.ref, lexed_.stopped); !e.empty()) return e;
    auto r = resolve(span.ref, scope_);
    if (!r.error.empty()) return r.error;
    if (!r.warning.empty()) out_.warnings.push_back(std::move(r.warning));
    auto text = r.value ? value_text(*r.value) : std::string();
    if (auto e = value_error(pos, span.ref, text); !e.empty()) return e;
    if (pos.quoting == shell_quoting::quoted_heredoc) {
      if (lexed_.heredocs[pos.heredoc].strip_tabs && loses_tabs(out_.script, text))
        return "the value of " + span.ref.braced() + " has a line starting with a tab, which the <<- heredoc would strip";
      out_.script += text;
      inlined_.emplace(pos.heredoc, &span.ref);
    } else {
      out_.script += replacement(pos.quoting, names_.assign(span.ref, std::move(text), out_.variables));
    }
    offsets_.add(span.end, out_.script.size());
    return {};
  }

  std::string_view command_;
  const render_scope& scope_;
  std::vector<reference_span> spans_;
  shell_lex_result lexed_;
  rendered_shell out_;
  variable_names names_;
  offset_map offsets_;
  std::map<std::size_t, const reference*> inlined_;  // heredoc index -> its first inlined reference
};

}  // namespace

// docs/reference/templates.md, "Code positions": refused whatever the value, because no
// quoting survives the second reading (an interpreter's own syntax, a shell reading the text).
std::string code_position_error(std::string_view runner, const reference& ref) {
  return ref.braced() + " is in code that " + std::string(runner.empty() ? "a shell" : runner) +
         " runs: its value would run as code there, whatever it holds";
}

std::string code_position_hint(const reference& ref) {
  const auto var = shell_variable_name(ref);
  return "pass the value as data instead: as an argument, sh -c '... \"$1\"' _ " + ref.braced() +
         ", or read it from the environment inside the code, \"$" + var + "\" (os.environ['" + var + "'], $ENV{" + var +
         "}, ENVIRON[\"" + var + "\"])";
}

std::string shell_variable_name(const reference& ref) {
  std::string name = "RECIPE_VAR_" + shell_name_part(ref.root);
  for (const auto& seg : ref.path) name += "__" + shell_name_part(seg.key);
  return name;
}

rendered_shell render_shell(std::string_view command, const render_scope& scope) {
  return shell_renderer(command, scope).run();
}

}  // namespace arun::engine
