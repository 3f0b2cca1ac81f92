#include "recipe_views.hpp"

#include <arun/plan.hpp>

#include <arun/value_format.hpp>

#include <fmt/format.h>

#include <functional>
#include <map>

namespace arun::io {
namespace {

std::string_view type_name(const step& s) {
  switch (s.type) {
    case step_type::bash: return "bash";
    case step_type::agent: return "agent";
    case step_type::recipe: return "recipe";
    case step_type::loop: return "loop";
    case step_type::gate: return "approval gate";
  }
  return "?";
}

std::string one_line(std::string_view text, std::size_t max = 72) {
  std::string s(text.substr(0, text.find('\n')));
  if (s.size() > max) {
    // Cut on a UTF-8 character boundary: never before a continuation byte.
    std::size_t cut = max - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  else if (text.find('\n') != std::string_view::npos && text.find('\n') + 1 < text.size()) s += " ...";
  return s;
}

// Seconds for people: 600 -> "600s", 2.5 -> "2.5s".
std::string seconds_text(double s) { return fmt::format("{:g}s", s); }

std::string retry_text(const retry_policy& r) {
  const char* kind = r.backoff == backoff_kind::linear ? "linear" : r.backoff == backoff_kind::constant ? "constant" : "exponential";
  return fmt::format("{} attempts, {} backoff {}..{}{}", r.max_attempts, kind, seconds_text(r.initial_delay),
                     seconds_text(r.max_delay), r.jitter > 0 ? fmt::format(", jitter {:g}", r.jitter) : "");
}

void explain_steps(const std::vector<step>& steps, int depth, std::string& out) {
  const std::string pad(static_cast<std::size_t>(depth) * 4 + 2, ' ');
  int n = 0;
  for (const auto& s : steps) {
    out += fmt::format("{}{}. {} [{}]{}\n", pad, ++n, s.id, type_name(s), s.name.empty() ? "" : " " + s.name);
    const std::string more = pad + "     ";
    if (!s.description.empty()) out += more + one_line(s.description) + "\n";
    if (!s.condition.empty()) out += more + "only when: " + one_line(s.condition) + "\n";
    if (s.type == step_type::bash) out += more + "command: " + one_line(s.command) + "\n";
    if (s.type == step_type::agent)
      out += more + "agent: " + (s.agent.agent.empty() ? "(default)" : s.agent.agent) +
             (s.agent.mode.empty() ? "" : ", mode " + s.agent.mode) + "; prompt: " + one_line(s.agent.prompt, 56) + "\n";
    if (s.type == step_type::recipe) out += more + "calls recipe: " + s.call.recipe + "\n";
    if (s.approval.required) out += more + "needs approval" + (s.approval.prompt.empty() ? "" : ": " + one_line(s.approval.prompt)) + "\n";
    if (s.foreach)
      out += more + fmt::format("for each {} in {}, {} at a time{}\n", s.foreach->as, to_compact_json(s.foreach->items),
                                s.foreach->max_concurrent == 0 ? std::string("all") : std::to_string(s.foreach->max_concurrent),
                                s.foreach->collect ? ", collected into " + *s.foreach->collect : "");
    if (s.loop_while) out += more + "while: " + one_line(s.loop_while->condition) + "\n";
    if (s.parallel_group) out += more + "parallel group: " + *s.parallel_group + "\n";
    if (!s.depends_on.empty()) {
      std::string deps;
      for (const auto& d : s.depends_on) deps += (deps.empty() ? "" : ", ") + d;
      out += more + "after: " + deps + "\n";
    }
    if (s.output) out += more + "output -> " + *s.output + "\n";
    if (s.timeout) out += more + "timeout: " + seconds_text(s.timeout->count()) + "\n";
    if (s.retry) out += more + "retry: " + retry_text(*s.retry) + "\n";
    if (s.on_error != on_error_policy::fail)
      out += more + "on error: " + (s.on_error == on_error_policy::continue_run ? "continue" : "skip remaining") + "\n";
    if (!s.when_tags.empty()) {
      std::string tags;
      for (const auto& t : s.when_tags) tags += (tags.empty() ? "" : ", ") + t;
      out += more + "tags: " + tags + "\n";
    }
    explain_steps(s.steps, depth + 1, out);
  }
}

}  // namespace

std::string explain_recipe(const recipe& r) {
  std::string out = fmt::format("recipe {} {}\n", r.name, r.version);
  if (!r.description.empty()) out += "  " + r.description + "\n";
  out += "  file: " + r.source_path + "\n";
  if (!r.author.empty()) out += "  author: " + r.author + "\n";
  out += std::string("  execution: ") + (r.execution == execution_mode::dag ? "dag" : "sequential") + "\n";
  if (r.default_step_timeout) out += "  default step timeout: " + seconds_text(r.default_step_timeout->count()) + "\n";
  if (!r.context.empty()) {
    out += "context defaults:\n";
    for (const auto& kv : r.context) out += fmt::format("  {} = {}\n", std::string(kv.key()), one_line(to_compact_json(kv.value())));
  }
  for (const auto* doc : {&r.inputs, &r.parameters})
    if (!doc->is_null()) out += std::string(doc == &r.inputs ? "inputs: " : "parameters: ") + one_line(to_compact_json(*doc), 200) + "\n";
  if (!r.steps.empty()) {
    out += "steps:\n";
    explain_steps(r.steps, 0, out);
  }
  for (const auto& st : r.stages) {
    out += "stage " + st.name + (st.description.empty() ? "" : ": " + st.description) + "\n";
    if (!st.condition.empty()) out += "  only when: " + one_line(st.condition) + "\n";
    if (st.approval.required)
      out += std::string("  needs approval ") + (stage_gate_runs_after(st, r) ? "after" : "before") + " the stage" +
             (st.approval.prompt.empty() ? "" : ": " + one_line(st.approval.prompt)) + "\n";
    explain_steps(st.steps, 0, out);
  }
  if (r.output) out += "final output: " + *r.output + "\n";
  return out;
}

namespace {

// Emits nodes and edges for DOT or Mermaid; the two differ only in syntax.
class graph_writer {
public:
  explicit graph_writer(graph_format f) : f_(f) {}

  std::string run(const recipe& r) {
    out_ = f_ == graph_format::dot ? "digraph \"" + escape(r.name) + "\" {\n  rankdir=TB;\n  node [fontname=\"sans\"];\n"
                                   : "flowchart TD\n";
    node("recipe_start", "start", "circle");
    std::string previous = "recipe_start";
    std::vector<const step*> all;
    auto walk = [&](const std::vector<step>& steps) { previous = sequence(steps, previous, all); };
    if (!r.steps.empty()) walk(r.steps);
    for (const auto& st : r.stages) {
      if (st.approval.required) {
        const auto id = "stage_gate_" + safe(st.name);
        node(id, "approve stage " + st.name + "?", "gate");
        edge(previous, id, "");
        for (const auto& from : std::exchange(pending_skips_, {})) edge(from, id, "skip");
        previous = id;
      }
      walk(st.steps);
    }
    node("recipe_end", "end", "circle");  // not `end`: a Mermaid keyword
    edge(previous, "recipe_end", "");
    for (const auto& from : std::exchange(pending_skips_, {})) edge(from, "recipe_end", "skip");
    for (const auto* s : all)
      for (const auto& dep : s->depends_on) edge(safe(dep), safe(s->id), "after", true);
    out_ += f_ == graph_format::dot ? "}\n" : "";
    return out_;
  }

private:
  // Node ids from the step's position: `a.b` and `a_b` must never share a node.
  std::string safe(std::string_view id) {
    const auto [it, fresh] = ids_.try_emplace(std::string(id), "s" + std::to_string(ids_.size() + 1));
    return it->second;
  }
  static std::string escape(std::string_view text) {
    std::string s;
    for (char c : text) {
      if (c == '"' || c == '\\') s += '\\', s += c;
      else if (c == '\n') s += ' ';
      else s += c;
    }
    return s;
  }
  static std::string mermaid_text(std::string_view text) {
    std::string s;
    for (char c : text) s += c == '"' ? '\'' : c == '\n' ? ' ' : c;
    return s;
  }

  void node(const std::string& id, const std::string& label, std::string_view shape) {
    if (f_ == graph_format::dot) {
      const char* dot_shape = shape == "diamond" ? "diamond" : shape == "circle" ? "circle" : shape == "recipe" ? "box3d"
                              : shape == "gate" ? "octagon" : "box";
      out_ += fmt::format("  {} [label=\"{}\", shape={}];\n", id, escape(label), dot_shape);
      return;
    }
    const auto text = mermaid_text(label);
    if (shape == "diamond") out_ += fmt::format("  {}{{\"{}\"}}\n", id, text);
    else if (shape == "circle") out_ += fmt::format("  {}((\"{}\"))\n", id, text);
    else if (shape == "recipe") out_ += fmt::format("  {}[[\"{}\"]]\n", id, text);
    else if (shape == "gate") out_ += fmt::format("  {}{{{{\"{}\"}}}}\n", id, text);
    else out_ += fmt::format("  {}[\"{}\"]\n", id, text);
  }

  void edge(const std::string& from, const std::string& to, const std::string& label, bool dashed = false) {
    if (f_ == graph_format::dot) {
      std::string attrs;
      if (!label.empty()) attrs += "label=\"" + escape(label) + "\"";
      if (dashed) attrs += std::string(attrs.empty() ? "" : ", ") + "style=dashed";
      out_ += fmt::format("  {} -> {}{};\n", from, to, attrs.empty() ? "" : " [" + attrs + "]");
      return;
    }
    const char* arrow = dashed ? "-.->" : "-->";
    out_ += label.empty() ? fmt::format("  {} {} {}\n", from, arrow, to)
                          : fmt::format("  {} {}|\"{}\"| {}\n", from, arrow, mermaid_text(label), to);
  }

  void open_cluster(const std::string& id, const std::string& label) {
    out_ += f_ == graph_format::dot ? fmt::format("  subgraph cluster_{} {{\n  label=\"{}\";\n", id, escape(label))
                                    : fmt::format("  subgraph {} [\"{}\"]\n", id, mermaid_text(label));
  }
  void close_cluster() { out_ += f_ == graph_format::dot ? "  }\n" : "  end\n"; }

  // Draws `steps` after `previous`; returns the node the next step follows.
  std::string sequence(const std::vector<step>& steps, std::string previous, std::vector<const step*>& all) {
    std::string open_group;
    for (const auto& s : steps) {
      all.push_back(&s);
      const std::string group = s.parallel_group.value_or("");
      if (group != open_group) {
        if (!open_group.empty()) close_cluster();
        if (!group.empty()) open_cluster("group_" + safe(group), "parallel: " + group);
        open_group = group;
      }
      previous = one_step(s, previous, all);
    }
    if (!open_group.empty()) close_cluster();
    return previous;
  }

  std::string one_step(const step& s, const std::string& previous, std::vector<const step*>& all) {
    const auto id = safe(s.id);
    std::string entry = previous;
    if (!s.condition.empty()) {
      node(id + "_if", one_line(s.condition, 40), "diamond");
      edge(previous, id + "_if", "");
      entry = id + "_if";
    }
    const std::string shape = s.type == step_type::recipe ? "recipe" : s.type == step_type::gate || s.approval.required ? "gate" : "box";
    std::string label = s.id + " (" + std::string(type_name(s)) + ")";
    if (s.type == step_type::recipe) label += ": " + s.call.recipe;
    if (s.foreach || s.loop_while) {
      open_cluster("loop_" + id, s.foreach ? "for each " + s.foreach->as : "while " + one_line(s.loop_while->condition, 30));
      node(id, label, shape);
      if (!s.steps.empty()) sequence(s.steps, id, all);
      close_cluster();
    } else {
      node(id, label, shape);
    }
    edge(entry, id, s.condition.empty() ? "" : "yes");
    if (!s.condition.empty()) {
      // The skip edge: a false condition passes straight to what follows.
      skipped_.push_back(entry);
    }
    for (const auto& from : std::exchange(pending_skips_, {})) edge(from, id, "skip");
    pending_skips_ = std::move(skipped_);
    skipped_.clear();
    return id;
  }

  graph_format f_;
  std::string out_;
  std::vector<std::string> skipped_, pending_skips_;
  std::map<std::string, std::string> ids_;
};

}  // namespace

std::string graph_recipe(const recipe& r, graph_format format) { return graph_writer(format).run(r); }

}  // namespace arun::io
