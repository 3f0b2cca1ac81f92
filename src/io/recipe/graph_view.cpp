// `arun graph`: the recipe's flow as DOT or Mermaid. A builder walks the recipe the way the
// engine runs it and records nodes, edges and clusters; an emitter writes one of the two
// syntaxes, which differ only in spelling.
#include "recipe/recipe_views.hpp"

#include "files/text_lines.hpp"

#include <arun/plan.hpp>
#include <arun/value_format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

namespace arun::io {
namespace {

enum class shape { terminal, step, decision, recipe, gate, loop, fork, join };

struct graph_node {
  std::string id, label;
  shape kind;
};

struct graph_edge {
  std::string from, to, label;
  bool dashed = false;
};

struct cluster {
  std::string id, label;
  std::vector<std::string> nodes;  // ids, in the order they were made
  std::vector<std::unique_ptr<cluster>> children;
};

// An edge still to be drawn: from `node`, labelled, to whatever comes next.
struct exit_edge {
  std::string node, label;
};
using exits = std::vector<exit_edge>;

class flow_builder {
public:
  explicit flow_builder(const graph_options& o) : options_(o) { open_.push_back(&root_); }

  void build(const recipe& r) {
    add_node("recipe_start", "start", shape::terminal);
    std::vector<const recipe*> calling{&r};
    const auto last = recipe_flow(r, {{"recipe_start", ""}}, "", calling);
    add_node("recipe_end", "end", shape::terminal);  // not `end`: a Mermaid keyword
    connect(last, "recipe_end");
  }

  std::string emit(const std::string& name) const {
    const bool dot = options_.format == graph_format::dot;
    std::string out = dot ? "digraph \"" + dot_text(name) + "\" {\n  rankdir=TB;\n  node [fontname=\"sans\"];\n"
                          : "flowchart TD\n";
    emit_cluster(root_, out, 1);
    for (const auto& e : edges_) out += dot ? dot_edge(e) : mermaid_edge(e);
    if (dot) out += "}\n";
    return out;
  }

private:
  // --- the flow -----------------------------------------------------------------------

  // A recipe's steps or stages after `in`; `scope` keeps the ids of an expanded sub-recipe
  // apart from its caller's.
  exits recipe_flow(const recipe& r, exits in, const std::string& scope, std::vector<const recipe*>& calling) {
    const bool dag = r.execution == execution_mode::dag;
    if (!r.steps.empty()) in = steps_flow(r, r.steps, std::move(in), scope, calling, dag);
    for (const auto& st : r.stages) {
      open_cluster("stage " + st.name);
      std::optional<exit_edge> skip;
      if (!st.condition.empty()) {
        const auto d = new_node(one_line(st.condition, 40), shape::decision);
        connect(in, d);
        in = {{d, "yes"}};
        skip = exit_edge{d, "skip"};
      }
      const bool gate = st.approval.required;
      const bool after = gate && stage_gate_runs_after(st, r);
      if (gate && !after) in = gate_flow("approve stage " + st.name + "?", std::move(in));
      in = steps_flow(r, st.steps, std::move(in), scope, calling, dag);
      if (gate && after) in = gate_flow("approve stage " + st.name + "?", std::move(in));
      close_cluster();
      if (skip) in.push_back(*skip);
    }
    // Sequential depends_on orders nothing (docs/reference/recipe.md,
    // "depends_on and execution: dag"): shown as a dashed edge.
    if (r.execution == execution_mode::sequential)
      for_each_step(r, [&](const step& s, int) {
        for (const auto& dep : s.depends_on) {
          const auto from = step_nodes_.find(scope + dep), to = step_nodes_.find(scope + s.id);
          if (from != step_nodes_.end() && to != step_nodes_.end())
            edges_.push_back({from->second, to->second, "depends on", true});
        }
      });
    return in;
  }

  exits gate_flow(const std::string& label, exits in) {
    const auto g = new_node(label, shape::gate);
    connect(in, g);
    return {{g, "approved"}};
  }

  // `dag`: the recipe's own step lists under execution: dag; a loop body always runs in order.
  exits steps_flow(const recipe& r, const std::vector<step>& steps, exits in, const std::string& scope,
                   std::vector<const recipe*>& calling, bool dag) {
    if (dag) return dag_flow(r, steps, std::move(in), scope, calling);
    for (std::size_t i = 0; i < steps.size();) {
      // docs/reference/recipe.md, "parallel_group": a maximal run of consecutive steps with the
      // same group runs together.
      std::size_t end = i + 1;
      if (steps[i].parallel_group)
        while (end < steps.size() && steps[end].parallel_group == steps[i].parallel_group) ++end;
      if (end - i < 2) {
        in = step_flow(r, steps[i], std::move(in), scope, calling);
      } else {
        open_cluster("parallel: " + *steps[i].parallel_group);
        const auto fork = new_node("fork", shape::fork);
        connect(in, fork);
        exits all;
        for (auto k = i; k < end; ++k)
          for (auto& e : step_flow(r, steps[k], {{fork, ""}}, scope, calling)) all.push_back(std::move(e));
        const auto join = new_node("join", shape::join);
        connect(all, join);
        close_cluster();
        in = {{join, ""}};
      }
      i = end;
    }
    return in;
  }

  // docs/reference/recipe.md, "depends_on and execution: dag": each step after what it waits for;
  // steps that wait for nothing start at once, and what follows the DAG waits for the steps nothing
  // waits for.
  exits dag_flow(const recipe& r, const std::vector<step>& steps, const exits& in, const std::string& scope,
                 std::vector<const recipe*>& calling) {
    const auto waits = dag_waits_for(steps);
    std::vector<std::optional<exits>> done(steps.size());
    std::vector<bool> awaited(steps.size(), false);
    for (const auto& w : waits)
      for (auto d : w) awaited[d] = true;
    // In dependency order (validation refuses cycles; a leftover is drawn from the start).
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        if (done[i] || !std::all_of(waits[i].begin(), waits[i].end(), [&](auto d) { return done[d].has_value(); }))
          continue;
        exits before;
        for (auto d : waits[i]) before.insert(before.end(), done[d]->begin(), done[d]->end());
        done[i] = step_flow(r, steps[i], waits[i].empty() ? in : before, scope, calling);
        progress = true;
      }
    }
    exits out;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (!done[i]) done[i] = step_flow(r, steps[i], in, scope, calling);
      if (!awaited[i]) out.insert(out.end(), done[i]->begin(), done[i]->end());
    }
    return out;
  }

  exits step_flow(const recipe& r, const step& s, exits in, const std::string& scope, std::vector<const recipe*>& calling) {
    std::optional<exit_edge> skip;
    if (!s.condition.empty()) {
      const auto d = new_node(one_line(s.condition, 40), shape::decision);
      connect(in, d);
      in = {{d, "yes"}};
      skip = exit_edge{d, "skip"};  // a false condition passes to what follows
    }
    exits out;
    if ((s.foreach || s.loop_while) && !s.steps.empty()) {
      const auto loop = new_node(s.id + ": " + loop_text(s), shape::loop);
      remember(scope, s, loop);
      connect(in, loop);
      open_cluster("body of " + s.id);
      const auto body =
          steps_flow(r, s.steps, {{loop, s.foreach ? "each " + s.foreach->as : "repeat"}}, scope, calling, false);
      close_cluster();
      for (const auto& e : body) edges_.push_back({e.node, loop, e.label.empty() ? "next" : e.label, true});
      out = {{loop, "done"}};
    } else if (const recipe* child = s.foreach || s.loop_while ? nullptr : expandable(s, r, calling)) {
      const auto call = new_node(s.id + " (recipe): " + s.call.recipe, shape::recipe);
      remember(scope, s, call);
      connect(in, call);
      open_cluster("recipe " + child->name);
      calling.push_back(child);
      out = recipe_flow(*child, {{call, ""}}, scope + s.id + "/", calling);
      calling.pop_back();
      close_cluster();
    } else {
      std::string label = s.id + " (" + std::string(to_string(s.type)) + ")";
      if (s.type == step_type::recipe) label += ": " + s.call.recipe;
      if (s.foreach || s.loop_while) label += ": " + loop_text(s);
      const auto kind = s.type == step_type::recipe                              ? shape::recipe
                        : s.type == step_type::gate || s.approval.required         ? shape::gate
                        : s.foreach || s.loop_while                                ? shape::loop
                                                                                   : shape::step;
      const auto n = new_node(label, kind);
      remember(scope, s, n);
      connect(in, n);
      out = {{n, ""}};
    }
    if (skip) out.push_back(*skip);
    return out;
  }

  // The sub-recipe to draw inside a call: only with --expand, below the depth limit, and not
  // one already being drawn further up (a recursive recipe is drawn once).
  const recipe* expandable(const step& s, const recipe& caller, const std::vector<const recipe*>& calling) const {
    if (s.type != step_type::recipe || !options_.expand) return nullptr;
    if (static_cast<int>(calling.size()) > options_.max_depth) return nullptr;
    const recipe* child = options_.expand(caller, s);
    if (!child) return nullptr;
    const bool recursive = std::any_of(calling.begin(), calling.end(),
                                       [&](const recipe* r) { return r->source_path == child->source_path; });
    return recursive ? nullptr : child;
  }

  static std::string loop_text(const step& s) {
    if (s.loop_while) return "while " + one_line(s.loop_while->condition, 30);
    const auto& f = *s.foreach;
    const auto items = f.items.is_string() ? std::string(f.items.get_string()) : to_compact_json(f.items);
    return "for each " + f.as + " in " + one_line(items, 30) +
           (f.max_concurrent == 1 ? "" : f.max_concurrent == 0 ? ", all at once" : fmt::format(", {} at a time", f.max_concurrent));
  }

  void remember(const std::string& scope, const step& s, const std::string& node) { step_nodes_.emplace(scope + s.id, node); }

  // --- the model ----------------------------------------------------------------------

  std::string new_node(const std::string& label, shape kind) {
    auto id = "n" + std::to_string(++counter_);
    add_node(id, label, kind);
    return id;
  }
  void add_node(const std::string& id, const std::string& label, shape kind) {
    nodes_.emplace(id, graph_node{id, label, kind});
    open_.back()->nodes.push_back(id);
  }
  void connect(const exits& from, const std::string& to) {
    for (const auto& e : from) edges_.push_back({e.node, to, e.label, false});
  }
  void open_cluster(const std::string& label) {
    auto c = std::make_unique<cluster>();
    c->id = "c" + std::to_string(++clusters_);
    c->label = label;
    auto* raw = c.get();
    open_.back()->children.push_back(std::move(c));
    open_.push_back(raw);
  }
  void close_cluster() { open_.pop_back(); }

  // --- the syntaxes -------------------------------------------------------------------

  static std::string dot_text(std::string_view text) {
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
    for (char c : text) {
      if (c == '"') s += "#quot;";
      else s += c == '\n' ? ' ' : c;
    }
    return s;
  }

  void emit_cluster(const cluster& c, std::string& out, int depth) const {
    const std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
    const bool dot = options_.format == graph_format::dot;
    for (const auto& id : c.nodes) out += pad + (dot ? dot_node(nodes_.at(id)) : mermaid_node(nodes_.at(id)));
    for (const auto& child : c.children) {
      out += dot ? fmt::format("{}subgraph cluster_{} {{\n{}  label=\"{}\";\n", pad, child->id, pad, dot_text(child->label))
                 : fmt::format("{}subgraph {} [\"{}\"]\n", pad, child->id, mermaid_text(child->label));
      emit_cluster(*child, out, depth + 1);
      out += pad + (dot ? "}\n" : "end\n");
    }
  }

  static std::string dot_node(const graph_node& n) {
    const char* attrs = "shape=box";
    switch (n.kind) {
      case shape::terminal: attrs = "shape=circle"; break;
      case shape::step: attrs = "shape=box"; break;
      case shape::decision: attrs = "shape=diamond"; break;
      case shape::recipe: attrs = "shape=box3d"; break;
      case shape::gate: attrs = "shape=octagon"; break;
      case shape::loop: attrs = "shape=box, peripheries=2"; break;
      case shape::fork:
      case shape::join: attrs = "shape=point, width=0.12"; break;
    }
    return fmt::format("{} [label=\"{}\", {}];\n", n.id, dot_text(n.label), attrs);
  }

  static std::string mermaid_node(const graph_node& n) {
    const auto text = mermaid_text(n.label);
    switch (n.kind) {
      case shape::terminal:
      case shape::fork:
      case shape::join: return fmt::format("{}((\"{}\"))\n", n.id, text);
      case shape::decision: return fmt::format("{}{{\"{}\"}}\n", n.id, text);
      case shape::recipe: return fmt::format("{}[[\"{}\"]]\n", n.id, text);
      case shape::gate: return fmt::format("{}{{{{\"{}\"}}}}\n", n.id, text);
      case shape::loop: return fmt::format("{}([\"{}\"])\n", n.id, text);
      case shape::step: break;
    }
    return fmt::format("{}[\"{}\"]\n", n.id, text);
  }

  static std::string dot_edge(const graph_edge& e) {
    std::string attrs;
    if (!e.label.empty()) attrs += "label=\"" + dot_text(e.label) + "\"";
    if (e.dashed) attrs += std::string(attrs.empty() ? "" : ", ") + "style=dashed";
    return fmt::format("  {} -> {}{};\n", e.from, e.to, attrs.empty() ? "" : " [" + attrs + "]");
  }

  static std::string mermaid_edge(const graph_edge& e) {
    const char* arrow = e.dashed ? "-.->" : "-->";
    return e.label.empty() ? fmt::format("  {} {} {}\n", e.from, arrow, e.to)
                           : fmt::format("  {} {}|\"{}\"| {}\n", e.from, arrow, mermaid_text(e.label), e.to);
  }

  const graph_options& options_;
  cluster root_;
  std::vector<cluster*> open_;
  std::map<std::string, graph_node> nodes_;
  std::vector<graph_edge> edges_;
  std::map<std::string, std::string> step_nodes_;  // scope + step id -> its node
  int counter_ = 0, clusters_ = 0;
};

}  // namespace

std::string graph_recipe(const recipe& r, const graph_options& options) {
  flow_builder b(options);
  b.build(r);
  return b.emit(r.name);
}

}  // namespace arun::io
