#include "template_checks.hpp"

#include "scheduler/foreach_lines.hpp"
#include "shell/shell_lexer.hpp"
#include "template/reference.hpp"
#include "template/template_syntax.hpp"

#include <boost/json/parse.hpp>

#include <map>

namespace arun {
namespace {

std::size_t count_of(std::string_view text, std::string_view part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string_view::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// Flaws in a shell comment change nothing (the renderer leaves comments as written), as the
// undefined-name check treats references there.
void drop_comments(std::string_view command, std::vector<engine::template_flaw>& flaws) {
  std::vector<engine::text_range> ranges;
  for (const auto& f : flaws) ranges.push_back({f.begin, f.end});
  const auto positions = engine::lex_shell(command, ranges).positions;
  std::vector<engine::template_flaw> kept;
  for (std::size_t i = 0; i < flaws.size(); ++i)
    if (i >= positions.size() || positions[i].quoting != engine::shell_quoting::comment) kept.push_back(std::move(flaws[i]));
  flaws = std::move(kept);
}

class template_checker {
public:
  explicit template_checker(std::vector<diagnostic>& out) : out_(out) {}

  void check_text(std::string_view key, const std::string& text, const source_location& where, const std::string& owner) {
    auto flaws = engine::find_template_flaws(text);
    if (key == "command" || key == "hooks") drop_comments(text, flaws);
    for (const auto& f : flaws) {
      auto d = make(where, key, "`" + f.text + "` in the " + std::string(key) + " of " + owner + " is not a reference: " + f.problem,
                    f.hint);
      d.level = severity::warning;
      point_at(d, owner, key, text, f);
      out_.push_back(std::move(d));
    }
    remember(owner, key, text);
  }

  // A foreach text without a reference renders as written: unless it is a JSON list, the
  // loop fails when it starts.
  void foreach_text(const std::string& text, const source_location& where, const std::string& owner) {
    boost::system::error_code ec;
    const auto parsed = boost::json::parse(text, ec);
    if (!engine::find_references(text).empty() || (!ec && parsed.is_array())) return check_text("foreach", text, where, owner);
    const auto flaws = engine::find_template_flaws(text);
    std::string why = "which is not a list";
    std::string hint = "write a list, a reference to one (\"{{files}}\"), or foreach: {lines: \"{{text}}\"} for the lines of a text";
    if (!flaws.empty()) {
      const auto& f = flaws.front();
      const bool whole = f.begin == text.find_first_not_of(" \t\r\n") && f.end == text.find_last_not_of(" \t\r\n") + 1;
      why += ": " + (whole ? std::string("it") : "`" + f.text + "`") + " is not a reference (" + f.problem + ")";
      hint = f.hint;
    }
    auto d = make(where, "foreach", "foreach of " + owner + " would get the text `" + engine::display_text(text) + "`, " + why, hint);
    d.code = "foreach-items";
    if (!flaws.empty()) point_at(d, owner, "foreach", text, flaws.front());
    out_.push_back(std::move(d));
    remember(owner, "foreach", text);
  }

private:
  static diagnostic make(const source_location& where, std::string_view key, std::string message, std::string hint) {
    diagnostic d;
    d.where = where;
    d.key = std::string(key);
    d.message = std::move(message);
    d.hint = std::move(hint);
    return d;
  }

  // The renderer finds the snippet's n-th appearance in the source from the value's start: the
  // earlier values of the same key (env) and the text before the flaw count.
  void point_at(diagnostic& d, const std::string& owner, std::string_view key, std::string_view text,
                const engine::template_flaw& f) {
    d.snippet = f.source_text;
    d.occurrence = count_of(earlier_[owner + "\n" + std::string(key)], f.source_text) + count_of(text.substr(0, f.begin), f.source_text);
  }

  void remember(const std::string& owner, std::string_view key, std::string_view text) {
    auto& earlier = earlier_[owner + "\n" + std::string(key)];
    earlier += text;
    earlier += '\0';
  }

  std::vector<diagnostic>& out_;
  std::map<std::string, std::string> earlier_;
};

}  // namespace

void check_template_syntax(const recipe& r, const std::function<template_field_list(const step&)>& fields_of,
                           std::vector<diagnostic>& out) {
  template_checker check(out);
  for_each_step(r, [&](const step& s, int) {
    const std::string owner = "step '" + s.id + "'";
    for (const auto& [key, text] : fields_of(s)) {
      if (key == "foreach" && !engine::lines_text(s.foreach->items))
        check.foreach_text(text, s.at(key), owner);
      else
        check.check_text(key, text, s.at(key), owner);
    }
  });
  for (const auto& st : r.stages) {
    check.check_text("condition", st.condition, st.where, "stage '" + st.name + "'");
    check.check_text("approval", st.approval.prompt, st.where, "stage '" + st.name + "'");
  }
  for (const auto& [name, value] : r.env) check.check_text("env", value, r.env_where, "the recipe's env");
  // The hooks' values have no recorded position: their diagnostics stay at the recipe's start.
  const auto before_hooks = out.size();
  for (const auto* hook : {&r.hooks.pre_step, &r.hooks.post_step, &r.hooks.on_error}) check.check_text("hooks", *hook, r.where, "the hooks");
  for (auto i = before_hooks; i < out.size(); ++i) out[i].snippet.clear();
}

}  // namespace arun
