#include "recipe/recipe_loader.hpp"

#include "recipe/fleet_fields.hpp"
#include "recipe/resources_reader.hpp"
#include "recipe/step_reader.hpp"
#include "recipe/yaml_fields.hpp"
#include "recipe/yaml_traps.hpp"
#include "recipe/yaml_json.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

namespace arun::io {
namespace {

const std::vector<std::string_view> top_level_keys = {
    "name", "description", "version", "author", "created", "updated", "tags", "context", "steps", "stages",
    "recursion", "hooks", "extends", "context_validation", "rate_limiting", "execution", "default_step_timeout",
    "output", "inputs", "parameters", "metadata", "lenient_templates", "env", "orchestrator",
    "secrets", "resources", "limits", "budget"};

constexpr std::size_t max_nesting = 64;  // docs/reference/recipe.md, "The file"

// The line and column (0-based, as yaml-cpp's marks) of byte `pos` of `text`.
YAML::Mark mark_at_byte(std::string_view text, std::size_t pos) {
  YAML::Mark m;
  pos = std::min(pos, text.size());
  m.pos = static_cast<int>(pos);
  const auto before = text.substr(0, pos);
  m.line = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const auto line_start = before.rfind('\n');
  m.column = static_cast<int>(line_start == std::string_view::npos ? pos : pos - line_start - 1);
  return m;
}

// Counts documents without building them; stops at the second (TOOLCHAIN.md §7: never
// LoadAll, which hangs on some inputs).
class document_counter final : public YAML::EventHandler {
public:
  int documents = 0;
  YAML::Mark second;  // where the second document starts
  void OnDocumentStart(const YAML::Mark& m) override {
    if (++documents == 2) second = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Where a second document starts, if the text has one.
std::optional<YAML::Mark> second_document(const std::string& text) {
  // Only a document marker can start a second document: skip the parse without one.
  if (text.find("\n---") == std::string::npos && text.find("\n...") == std::string::npos) return std::nullopt;
  std::istringstream in(text);
  YAML::Parser parser(in);
  document_counter counter;
  if (parser.HandleNextDocument(counter) && parser.HandleNextDocument(counter) && counter.documents > 1)
    return counter.second;
  return std::nullopt;
}

// Where the nesting first goes deeper than `limit` levels: flow brackets, block indentation
// and `- ` sequence entries, outside quotes and comments. An estimate of YAML's structure,
// used only to place the error when yaml-cpp gives up on a very deep document (its mark is
// the end of the node).
std::optional<std::size_t> nesting_overflow(std::string_view text, std::size_t limit) {
  std::vector<std::size_t> indents;  // the block levels open on this line, by indentation
  std::size_t flow = 0;
  for (std::size_t line = 0; line < text.size();) {
    const auto end = std::min(text.find('\n', line), text.size());
    auto i = text.find_first_not_of(' ', line);
    if (i == std::string_view::npos || i >= end || text[i] == '#') {
      line = end + 1;
      continue;
    }
    const auto indent = i - line;
    while (flow == 0 && !indents.empty() && indents.back() >= indent) indents.pop_back();
    if (flow == 0) indents.push_back(indent);
    for (char quote = 0; i < end; ++i) {
      const char c = text[i];
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') quote = c;
      else if (c == '#' && i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
      else if (c == '[' || c == '{') ++flow;
      else if ((c == ']' || c == '}') && flow > 0) --flow;
      else if (c == '-' && flow == 0 && i + 1 < end && text[i + 1] == ' ') indents.push_back(i + 1);
      if (indents.size() + flow > limit) return i;
    }
    line = end + 1;
  }
  return std::nullopt;
}

// yaml-cpp 0.7 accepts a quoted scalar whose closing quote never comes and swallows the rest
// of the file into it (later steps silently vanish). True when the quote at `pos` closes.
bool quote_closes(std::string_view text, std::size_t pos) {
  if (pos >= text.size() || (text[pos] != '"' && text[pos] != '\'')) return true;  // not where we thought
  const char quote = text[pos];
  for (std::size_t i = pos + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escape: skip the escaped character
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is an escaped single quote
        continue;
      }
      return true;
    }
  }
  return false;
}

bool quotes_closed(const yaml::node& n, std::string_view text, diagnostic_sink& sink) {
  if (n.IsScalar() && n.Tag() == "!" && !quote_closes(text, static_cast<std::size_t>(n.Mark().pos))) {
    sink.error(n.Mark(), "invalid YAML: this quoted string is never closed");
    return false;
  }
  return true;
}

// A NUL character (`\0`, `\x00`, `\u0000` in a double-quoted string) would end a command,
// prompt or value where it reaches bash, argv or the environment: `"echo kept\0; touch X"`
// would run as `echo kept`. Refused wherever it is, pointing at the escape.
bool free_of_nul(const yaml::node& n, std::string_view text, diagnostic_sink& sink) {
  if (!n.IsScalar() || n.Scalar().find('\0') == std::string::npos) return true;
  auto where = n.Mark();
  const auto from = static_cast<std::size_t>(std::max(0, where.pos));
  std::size_t at = std::string_view::npos;
  for (std::string_view escape : {"\\0", "\\x00", "\\u0000", "\\U00000000"})
    at = std::min(at, text.find(escape, from));
  if (at != std::string_view::npos) where = mark_at_byte(text, at);
  sink.error(where, "this string holds a NUL character, which would silently end it where it reaches a command, "
                    "argument or environment variable", {}, "remove the \\0 escape");
  return false;
}

// Nesting depth and node count (docs/reference/recipe.md, "The file": 64 levels, 1,000,000 nodes,
// aliases expanded), and quoted strings that never close.
bool within_limits(const yaml::node& n, int depth, std::size_t& budget, diagnostic_sink& sink,
                   std::string_view text) {
  if (depth > static_cast<int>(max_nesting)) {
    sink.error(n.Mark(), "the document nests deeper than " + std::to_string(max_nesting) + " levels");
    return false;
  }
  if (budget == 0) {
    sink.error(n.Mark(), "the document expands to more than the node limit (1,000,000 nodes, aliases expanded)");
    return false;
  }
  --budget;
  if (!quotes_closed(n, text, sink) || !free_of_nul(n, text, sink)) return false;
  if (n.IsSequence())
    for (const auto& item : n)
      if (!within_limits(item, depth + 1, budget, sink, text)) return false;
  if (n.IsMap())
    for (const auto& kv : n)
      if (!quotes_closed(kv.first, text, sink) || !free_of_nul(kv.first, text, sink) ||
          !within_limits(kv.second, depth + 1, budget, sink, text))
        return false;
  return true;
}

class recipe_reader {
public:
  recipe_reader(const yaml::node& root, diagnostic_sink& sink, recipe_sources* sources)
      : f_(root, sink, "the recipe"), sink_(sink), sources_(sources) {}

  recipe read() {
    f_.check_keys(top_level_keys);
    r_.source_path = sink_.file();
    r_.where = sink_.at(f_.map().Mark());
    read_metadata();
    if (auto ctx = f_.object("context")) r_.context = std::move(*ctx);
    r_.env = read_env_map(f_, "env");
    r_.env_where = sink_.at(f_.mark("env"));
    read_secrets();
    // The Python dialect's pacing of calls inside amplifier's own agent sessions: an agent
    // CLI paces itself, so nothing here can honour it. Say so rather than drop it.
    if (f_.has("orchestrator"))
      f_.warning("orchestrator", "'orchestrator' paces calls inside the Python runner's own agent sessions and has no "
                                 "effect on agent CLIs",
                 "rate_limiting.min_delay_ms spaces agent starts; rate_limiting.max_concurrent_llm caps them");
    read_body();
    read_recursion();
    read_hooks();
    if (auto e = f_.text("extends")) {
      r_.extends = *e;
      r_.extends_where = sink_.at(f_.mark("extends"));
    }
    read_context_validation();
    read_rate_limiting();
    read_limits(f_, r_);
    read_budget(f_, r_);
    r_.resources = read_resources(f_);
    if (auto e = f_.choice("execution", {"sequential", "dag"}))
      r_.execution = *e == "dag" ? execution_mode::dag : execution_mode::sequential;
    if (auto t = f_.seconds("default_step_timeout")) r_.default_step_timeout = seconds_d(*t);
    read_output();
    r_.inputs = f_.json("inputs");
    r_.parameters = f_.json("parameters");
    r_.metadata = f_.json("metadata");
    if (auto b = f_.boolean("lenient_templates")) r_.lenient_templates = *b;
    return std::move(r_);
  }

private:
  void read_metadata() {
    if (auto name = f_.text("name", true)) {
      r_.name = *name;
      static const std::regex pattern("[A-Za-z0-9_-]{1,100}");
      if (r_.name.find_first_not_of(" \t\r\n") == std::string::npos)
        f_.error("name", "the recipe's 'name' is empty");
      else if (!std::regex_match(r_.name, pattern))
        f_.warning("name", "recipe names use letters, digits, '_' and '-' (at most 100 characters)");
    }
    if (auto d = f_.text("description")) r_.description = *d;
    if (auto v = f_.text("version")) {
      r_.version = *v;
      static const std::regex semver(R"(\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?)");
      if (r_.version.size() > 256 || !std::regex_match(r_.version, semver)) f_.warning("version", "version '" + *v + "' is not semver (MAJOR.MINOR.PATCH)");
    }
    for (auto [key, field] : {std::pair{"author", &r_.author}, {"created", &r_.created}, {"updated", &r_.updated}})
      if (auto v = f_.text(key)) *field = *v;
    if (auto tags = f_.string_list("tags")) r_.tags = *tags;
  }

  void read_steps(const yaml::node& list, std::vector<step>& into) {
    into.reserve(into.size() + list.size());  // growing by doubling would hold 1.5x the steps
    for (const auto& node : list)
      if (auto s = read_step(node, sink_, sources_)) into.push_back(std::move(*s));
  }

  void read_body() {
    const bool has_steps = f_.has("steps"), has_stages = f_.has("stages");
    if (has_steps == has_stages) {
      sink_.error(f_.map().Mark(), has_steps ? "give 'steps' or 'stages', not both" : "the recipe needs 'steps': a list of steps",
                  "steps");
      if (!has_steps) return;
    }
    const char* key = has_steps ? "steps" : "stages";
    const auto list = f_.node(key);
    if (!list.IsSequence() || list.size() == 0) {
      f_.error(key, "'" + std::string(key) + "' must be a non-empty list");
      return;
    }
    if (has_steps) return read_steps(list, r_.steps);
    for (const auto& node : list) read_stage(node);
  }

  void read_stage(const yaml::node& node) {
    if (!node.IsMap()) {
      sink_.error(node.Mark(), "a stage must be a mapping with 'name' and 'steps'");
      return;
    }
    stage st;
    st.where = sink_.at(node.Mark());
    const field_reader f(node, sink_, "a stage");
    f.check_keys({"name", "description", "condition", "steps", "approval", "approval_required", "approval_message"},
                 {{"auto_approve_if", "is not supported: approve with --yes, `arun approve`, or a timeout default"}});
    if (auto n = f.text("name", true)) {
      st.name = *n;
      st.name_at = sink_.at(f.mark("name"));
    }
    if (auto d = f.text("description")) st.description = *d;
    if (auto c = f.condition("condition")) st.condition = *c;
    read_stage_approval(f, st);
    const auto steps = f.node("steps");
    if (!steps || !steps.IsSequence() || steps.size() == 0)
      f.error("steps", "stage '" + st.name + "' needs 'steps': a non-empty list");
    else
      read_steps(steps, st.steps);
    r_.stages.push_back(std::move(st));
  }

  void read_stage_approval(const field_reader& f, stage& st) {
    if (auto b = f.boolean("approval_required")) st.approval.required = *b;
    if (auto m = f.text("approval_message")) st.approval.prompt = *m;
    if (!f.has("approval")) return;
    for (const char* alias : {"approval_required", "approval_message"})
      if (f.has(alias)) f.error(alias, "give the 'approval' block or '" + std::string(alias) + "', not both");
    if (!f.node("approval").IsMap()) return f.error("approval", "'approval' must be a mapping (required, prompt, timeout, default, when)");
    const field_reader a(f.node("approval"), sink_, "the approval of stage '" + st.name + "'");
    a.check_keys({"required", "prompt", "timeout", "default", "when"});
    if (auto b = a.boolean("required")) st.approval.required = *b;
    if (auto p = a.text("prompt")) st.approval.prompt = *p;
    st.approval.timeout = a.seconds("timeout");
    if (st.approval.timeout && *st.approval.timeout == 0) st.approval.timeout.reset();  // 0: wait forever
    if (auto d = a.choice("default", {"deny", "approve"}))
      st.approval.default_decision = *d == "approve" ? approval_decision::approve : approval_decision::deny;
    if (auto w = a.choice("when", {"before", "after"})) st.approval.when = *w == "after" ? gate_timing::after : gate_timing::before;
  }

  void read_recursion() {
    if (!f_.has("recursion")) return;
    if (!f_.node("recursion").IsMap()) return f_.error("recursion", "'recursion' must be a mapping (max_depth, max_total_steps)");
    const field_reader rec(f_.node("recursion"), sink_, "the recursion block");
    rec.check_keys({"max_depth", "max_total_steps"});
    r_.recursion_set = true;
    if (auto d = rec.integer("max_depth", 1, 1000)) r_.recursion.max_depth = static_cast<int>(*d);
    if (auto t = rec.integer("max_total_steps", 1, 100'000'000)) r_.recursion.max_total_steps = static_cast<int>(*t);
  }

  void read_hooks() {
    if (!f_.has("hooks")) return;
    if (!f_.node("hooks").IsMap()) return f_.error("hooks", "'hooks' must be a mapping (pre_step, post_step, on_error)");
    const field_reader h(f_.node("hooks"), sink_, "the hooks block");
    h.check_keys({"pre_step", "post_step", "on_error"});
    r_.hooks_set = true;
    for (auto [key, field] : {std::pair{"pre_step", &r_.hooks.pre_step}, {"post_step", &r_.hooks.post_step},
                              {"on_error", &r_.hooks.on_error}})
      if (auto v = h.text(key)) *field = *v;
  }

  void read_secrets() {
    const auto names = f_.string_list("secrets");
    if (!names) return;
    r_.secrets_where = sink_.at(f_.mark("secrets"));
    static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& name : *names) {
      if (name.size() > 256 || !std::regex_match(name, identifier))
        f_.error("secrets", "secret name '" + name + "' must be a variable name (letters, digits, '_'; not first a digit)",
                 "the value comes from the environment variable of that name");
      else if (std::find(r_.secrets.begin(), r_.secrets.end(), name) == r_.secrets.end())
        r_.secrets.push_back(name);
    }
  }

  void read_context_validation() {
    if (!f_.has("context_validation")) return;
    const auto node = f_.node("context_validation");
    if (!node.IsMap()) return f_.error("context_validation", "'context_validation' must map variables to nonempty, path, git_repo or optional");
    const field_reader cv(node, sink_, "context_validation");
    static const std::vector<std::string_view> checks = {"nonempty", "path", "git_repo", "optional"};
    for (const auto& kv : node) {
      const auto& var = kv.first.Scalar();
      const auto rule = cv.text(var.c_str());
      if (!rule) continue;
      // The Rust runner checks nothing for "" and warns about a check it does not know; a
      // real recipe has context defaults that slipped under context_validation. The name is
      // still one the recipe expects to be given.
      if (rule->empty()) {
        r_.context_validation.emplace_back(var, context_check::optional);
        continue;
      }
      if (std::find(checks.begin(), checks.end(), *rule) == checks.end()) {
        auto hint = did_you_mean(*rule, checks);
        if (hint.empty()) hint = "if '" + *rule + "' is the default value of '" + var + "', it belongs under context:";
        cv.warning(var.c_str(), "'" + *rule + "' is no context check, so '" + var + "' is not checked (known: nonempty, path, git_repo, optional)", std::move(hint));
        r_.context_validation.emplace_back(var, context_check::optional);
        continue;
      }
      const auto check = *rule == "nonempty" ? context_check::nonempty : *rule == "path" ? context_check::path
                         : *rule == "git_repo" ? context_check::git_repo : context_check::optional;
      r_.context_validation.emplace_back(var, check);
    }
  }

  void read_rate_limiting() {
    if (!f_.has("rate_limiting")) return;
    if (!f_.node("rate_limiting").IsMap()) return f_.error("rate_limiting", "'rate_limiting' must be a mapping (max_concurrent_llm, min_delay_ms, backoff)");
    const field_reader rl(f_.node("rate_limiting"), sink_, "rate_limiting");
    rl.check_keys({"max_concurrent_llm", "min_delay_ms", "backoff"});
    if (auto n = rl.integer("max_concurrent_llm", 1, 100000)) r_.rate_limiting.max_concurrent_llm = static_cast<int>(*n);
    if (auto n = rl.integer("min_delay_ms", 0, 3'600'000)) r_.rate_limiting.min_delay_ms = static_cast<int>(*n);
    read_rate_limit_backoff(rl);
  }

  void read_rate_limit_backoff(const field_reader& rl) {
    if (!rl.has("backoff")) return;
    if (!rl.node("backoff").IsMap())
      return rl.error("backoff", "'rate_limiting.backoff' must be a mapping (max_retries, initial_delay, max_delay, multiplier)");
    const field_reader b(rl.node("backoff"), sink_, "rate_limiting.backoff");
    b.check_keys({"max_retries", "initial_delay", "max_delay", "multiplier"});
    auto& out = r_.rate_limiting.backoff;
    if (auto n = b.integer("max_retries", 0, 1000)) out.max_retries = static_cast<int>(*n);
    out.initial_delay = b.seconds("initial_delay");
    out.max_delay = b.seconds("max_delay");
    if (b.has("multiplier")) {
      const auto m = b.json("multiplier");  // a factor, not a duration
      if (!m.is_number() || !std::isfinite(m.to_number<double>()) || m.to_number<double>() < 1.0)
        b.error("multiplier", "'multiplier' must be 1 or more (1 keeps the delay constant)");
      else
        out.multiplier = m.to_number<double>();
    }
  }

  void read_output() {
    const auto out = f_.node("output");
    if (!out) return;
    if (out.IsMap()) return;  // documentation only (docs/reference/recipe.md, "Top-level fields")
    r_.output = f_.text("output");
  }

  field_reader f_;
  diagnostic_sink& sink_;
  recipe_sources* sources_;
  recipe r_;
};

}  // namespace

load_result load_recipe_text(std::string_view text, const std::string& file, const load_limits& limits) {
  diagnostic_sink sink(file, limits.max_nodes);
  sink.set_code("yaml-syntax");  // until the document is read as a recipe
  load_result out;
  auto finish = [&] {
    if (sink.has_errors()) out.value.reset();  // a recipe with errors is never run
    out.diagnostics = std::move(sink.list());
    return std::move(out);
  };
  if (text.size() > limits.max_bytes) {
    sink.set_code("recipe-file");
    sink.error(YAML::Mark::null_mark(), "file is " + std::to_string(text.size()) + " bytes; recipes are limited to " +
                       std::to_string(limits.max_bytes) + " bytes (--max-recipe-bytes raises it)");
    return finish();
  }
  const std::string source(text);
  if (const auto nul = source.find('\0'); nul != std::string::npos) {
    sink.error(mark_at_byte(source, nul), "the file holds a NUL byte: a recipe is text (is this a binary file?)");
    return finish();
  }
  yaml::parsed parsed;  // the document lives until the recipe is read
  try {
    parsed = yaml::parse(source);
    if (const auto second = second_document(source)) {
      sink.error(*second, "a second YAML document starts here; a recipe is exactly one document",
                 {}, "remove this '---' and what follows, or move it into its own file");
      return finish();
    }
  } catch (const YAML::ParserException& e) {
    // yaml-cpp reports "bad file" for nesting deeper than 500 levels, at the end of the node.
    if (e.msg == "bad file") {
      const auto at = nesting_overflow(source, max_nesting);
      sink.error(at ? mark_at_byte(source, *at) : e.mark, "the document nests deeper than " + std::to_string(max_nesting) + " levels");
    } else {
      sink.error(e.mark, "invalid YAML: " + e.msg, {}, yaml_error_hint(source, e.mark, e.msg));
    }
    return finish();
  }
  const auto& root = parsed.root;
  if (!root.IsMap()) {
    sink.set_code("invalid-field");
    sink.error(root.Mark(), "a recipe must be a mapping with 'name' and 'steps'");
    return finish();
  }
  std::size_t budget = limits.max_nodes;
  if (!within_limits(root, 0, budget, sink, source)) return finish();
  sink.set_code("invalid-field");
  if (limits.documents) {
    std::size_t json_budget = limits.max_nodes;
    try {
      (*limits.documents)[file] = yaml_to_json(root, json_budget);
    } catch (const yaml_too_large&) {
      // reported below by the reader, which meets the same aliases
    }
  }
  try {
    out.value = recipe_reader(root, sink, limits.sources).read();
  } catch (const yaml_too_large& e) {
    sink.error(root.Mark(), std::string(e.what()) + " (aliases expand beyond " + std::to_string(limits.max_nodes) + " nodes)");
  }
  return finish();
}

load_result load_recipe_file(const std::string& path, const load_limits& limits) {
  auto file_error = [&](std::string message) {
    diagnostic d;
    d.where.file = path;
    d.message = std::move(message);
    d.code = "recipe-file";
    load_result r;
    r.diagnostics.push_back(std::move(d));
    return r;
  };
  if (limits.sources)
    if (auto text = limits.sources->saved(path)) return load_recipe_text(*text, path, limits);
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error("cannot read the recipe file");
  // Read at most one byte past the limit (enough to refuse an oversized file), in chunks: the
  // limit may be far larger than the file, and must not become an allocation of its own.
  std::string text;
  constexpr std::size_t chunk = 64 * 1024;
  while (in && text.size() <= limits.max_bytes) {
    const auto want = std::min(chunk, limits.max_bytes + 1 - text.size());
    const auto at = text.size();
    text.resize(at + want);
    in.read(text.data() + at, static_cast<std::streamsize>(want));
    text.resize(at + static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > limits.max_bytes)
    return file_error("file is larger than " + std::to_string(limits.max_bytes) +
                      " bytes, the recipe limit (--max-recipe-bytes raises it)");
  if (limits.sources) limits.sources->read(path, text);
  return load_recipe_text(text, path, limits);
}

}  // namespace arun::io
