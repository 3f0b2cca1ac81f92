#include "dag_order.hpp"

#include "template/reference.hpp"

#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string_view>

namespace arun::engine {
namespace {

// Conditions also read bare identifiers (`status == 'ok'`); words inside string literals do
// not count, and `{{ref}}` roots are found by find_references.
void add_words(std::string_view text, name_set& out) {
  for (const auto& span : find_references(text)) out.insert(span.ref.root);
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\'' || c == '"') {
      const char quote = text[i++];
      while (i < text.size() && text[i] != quote) i += text[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    if (!(std::isalpha(c) || c == '_')) {
      ++i;
      continue;
    }
    const auto start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    out.emplace(text.substr(start, i - start));
  }
}

void add_strings(const boost::json::value& v, name_set& out) {
  if (const auto* s = v.if_string())
    for (const auto& span : find_references(*s)) out.insert(span.ref.root);
  if (const auto* a = v.if_array())
    for (const auto& item : *a) add_strings(item, out);
  if (const auto* o = v.if_object())
    for (const auto& kv : *o) add_strings(kv.value(), out);
}

void add_text(const std::string& text, name_set& out) {
  for (const auto& span : find_references(text)) out.insert(span.ref.root);
}

// What one instance of `s` renders, its loop body aside: evaluated per iteration, with the
// loop's own names in scope.
void instance_reads(const step& s, name_set& out) {
  for (const auto* text : {&s.command, &s.agent.prompt, &s.agent.agent, &s.agent.model, &s.agent.mode, &s.working_dir,
                           &s.call.recipe, &s.approval.prompt})
    add_text(*text, out);
  for (const auto& kv : s.env) add_text(kv.second, out);
  if (s.cache) {
    for (const auto& text : s.cache->key) add_text(text, out);
    for (const auto& text : s.cache->files) add_text(text, out);
  }
  add_strings(s.call.context, out);
  // recovery_on_failure's prompt, agent and model are templates rendered with the context.
  add_strings(s.call.recovery_on_failure, out);
  if (s.loop_while) {
    add_words(s.loop_while->condition, out);
    add_words(s.loop_while->break_when, out);
    add_strings(s.loop_while->update_context, out);
  }
}

// Every root name a step (and its loop body) reads.
void step_reads(const step& s, name_set& out) {
  instance_reads(s, out);
  add_words(s.condition, out);
  if (s.foreach) add_strings(s.foreach->items, out);
  for (const auto& child : s.steps) step_reads(child, out);
}

void add_outputs(const step& s, name_set& out) {
  for (const auto* name : {&s.output, &s.output_exit_code})
    if (*name) out.insert(**name);
  if (s.foreach && s.foreach->collect) out.insert(*s.foreach->collect);
}

}  // namespace

std::set<std::string, std::less<>> names_read(const step& s) {
  name_set out;
  step_reads(s, out);
  return out;
}

std::set<std::string, std::less<>> names_needed(const step& s) {
  name_set out;
  // Before any iteration: whether it runs, and over what.
  add_words(s.condition, out);
  if (s.foreach) add_strings(s.foreach->items, out);
  name_set inner;
  instance_reads(s, inner);
  // The body in order: what an earlier body step writes, a later one reads from it.
  name_set written;
  for (const auto& child : s.steps) {
    for (const auto& name : names_needed(child))
      if (!written.contains(name)) inner.insert(name);
    for (const auto& name : names_written(child)) written.insert(name);
  }
  if (s.foreach) inner.erase(s.foreach->as);
  if (s.loop_while) {  // a while loop's condition and updates read its own variables too
    for (const auto& name : written) inner.erase(name);
    for (const auto& kv : s.loop_while->update_context) inner.erase(kv.key());
  }
  for (const auto* local : {"_loop_index", "_loop_iteration"}) inner.erase(local);
  out.merge(inner);
  return out;
}

std::set<std::string, std::less<>> names_written(const step& s) {
  name_set out;
  add_outputs(s, out);
  // A while loop's variables, its body's outputs among them, outlive it.
  if (s.loop_while)
    for (const auto& child : s.steps)
      for (const auto& name : names_written(child)) out.insert(name);
  return out;
}

std::set<std::string, std::less<>> names_in_condition(std::string_view condition) {
  name_set out;
  add_words(condition, out);
  return out;
}

std::vector<std::vector<std::size_t>> dag_dependencies(const std::vector<step>& steps) {
  std::map<std::string, std::size_t, std::less<>> by_id, by_output;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    by_id[s.id] = i;
    name_set outputs;
    add_outputs(s, outputs);
    for (const auto& name : outputs) by_output[name] = i;
  }
  std::vector<std::vector<std::size_t>> deps(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::set<std::size_t> mine;
    for (const auto& d : steps[i].depends_on)
      if (auto it = by_id.find(d); it != by_id.end()) mine.insert(it->second);
    for (const auto& name : names_read(steps[i]))
      if (auto it = by_output.find(name); it != by_output.end()) mine.insert(it->second);
    mine.erase(i);
    deps[i].assign(mine.begin(), mine.end());
  }
  return deps;
}


std::string dag_cycle(const std::vector<step>& steps, const std::vector<std::vector<std::size_t>>& deps) {
  enum class mark { unseen, active, done };
  std::vector<mark> state(steps.size(), mark::unseen);
  std::vector<std::size_t> path;
  std::string cycle;
  std::function<void(std::size_t)> visit = [&](std::size_t i) {
    state[i] = mark::active;
    path.push_back(i);
    for (const auto d : deps[i]) {
      if (!cycle.empty()) break;
      if (state[d] == mark::active) {
        for (auto it = std::find(path.begin(), path.end(), d); it != path.end(); ++it) cycle += steps[*it].id + " -> ";
        cycle += steps[d].id;
      } else if (state[d] == mark::unseen) {
        visit(d);
      }
    }
    path.pop_back();
    state[i] = mark::done;
  };
  for (std::size_t i = 0; i < steps.size() && cycle.empty(); ++i)
    if (state[i] == mark::unseen) visit(i);
  return cycle;
}

}  // namespace arun::engine
