#include "template/render.hpp"

#include "spilled_output.hpp"

#include <arun/value_format.hpp>

namespace arun::engine {
namespace {

// "a, b, c" (at most 20 names), for the undeclared-name error.
std::string known_names(const render_scope& scope) {
  name_set names;
  if (scope.declared)
    names = *scope.declared;
  else
    for (const auto* source : {&scope.context, scope.locals})
      if (source)
        for (const auto& kv : *source) names.emplace(kv.key());
  std::string list;
  std::size_t shown = 0;
  for (const auto& n : names) {
    if (shown++ == 20) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "" : ", ") + n;
  }
  return list.empty() ? "none" : list;
}

void render_into(rendered_value& out, const boost::json::value& v, const render_scope& scope);

}  // namespace

std::string value_text(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: return {};
    case boost::json::kind::string: return std::string(v.get_string());
    default: return to_compact_json(v);
  }
}

const boost::json::object* root_holder(const render_scope& scope, std::string_view name) {
  for (const auto* source : {scope.locals, scope.builtins, &scope.context})
    if (source && source->contains(name)) return source;
  return nullptr;
}

const boost::json::value* find_root(const render_scope& scope, std::string_view name) {
  const auto* holder = root_holder(scope, name);
  return holder ? &holder->find(name)->value() : nullptr;
}

boost::json::object visible_context(const render_scope& scope) {
  boost::json::object all = scope.context;
  if (scope.locals)
    for (const auto& kv : *scope.locals) all[kv.key()] = kv.value();
  return all;
}

namespace {

// lookup() through spilled outputs: a reference met on the way or at the end is loaded, and
// the resolution owns what was loaded.
resolution resolve_loading(const boost::json::object& holder, const reference& ref, output_store& outputs,
                           lookup_status& status) {
  resolution r;  // holder has ref.root
  const boost::json::value* v = &holder.find(ref.root)->value();
  const auto load = [&](const boost::json::value& spilled) {
    auto loaded = load_spilled(spilled, outputs);
    if (auto* why = std::get_if<std::string>(&loaded)) {
      r.error = ref.braced() + ": " + *why;
      return false;
    }
    r.loaded = std::make_shared<const boost::json::value>(std::move(std::get<boost::json::value>(loaded)));
    v = r.loaded.get();
    return true;
  };
  for (const auto& seg : ref.path) {
    if (is_spilled(*v) && !load(*v)) return r;
    if ((v = step_into(*v, seg)) == nullptr) {
      status = lookup_status::path_missing;
      r.loaded.reset();
      return r;
    }
  }
  if (holds_spilled(*v) && !load(*v)) return r;
  status = lookup_status::found;
  r.value = v;
  return r;
}

}  // namespace

resolution resolve(const reference& ref, const render_scope& scope) {
  const auto* holder = root_holder(scope, ref.root);
  const auto& in = holder ? *holder : scope.context;
  auto status = lookup_status::root_unset;
  if (scope.outputs && in.contains(ref.root)) {
    auto loaded = resolve_loading(in, ref, *scope.outputs, status);
    if (!loaded.error.empty() || status == lookup_status::found) return loaded;
  } else {
    const auto found = lookup(in, ref);
    if (found.status == lookup_status::found) return {found.value, {}, {}, {}};
    status = found.status;
  }
  const bool lenient = scope.mode == undefined_mode::lenient;
  const bool strict = scope.mode == undefined_mode::strict;
  if (status == lookup_status::root_unset) {
    const bool declared = !scope.declared || scope.declared->contains(ref.root);
    if (!declared) {
      if (lenient) return {nullptr, ref.braced() + " names an undefined variable: rendered empty", {}};
      return {nullptr, {}, "undefined variable '" + ref.root + "' in " + ref.braced() + " (defined: " + known_names(scope) + ")"};
    }
    const std::string why = ref.braced() + " has no value (the step that sets '" + ref.root +
                            "' was skipped, failed or has not run)";
    if (strict) return {nullptr, {}, why};
    return {nullptr, why + ": rendered empty", {}};
  }
  const std::string why = ref.braced() + " does not exist in the value of '" + ref.root + "'";
  if (strict) return {nullptr, {}, why};
  return {nullptr, why + ": rendered empty", {}};
}

rendered_text render_text(std::string_view text, const render_scope& scope) {
  rendered_text out;
  std::size_t copied = 0;
  for (const auto& span : find_references(text)) {
    out.text.append(text.substr(copied, span.begin - copied));
    copied = span.end;
    auto r = resolve(span.ref, scope);
    if (!r.error.empty()) {
      out.error = std::move(r.error);
      return out;
    }
    if (!r.warning.empty()) out.warnings.push_back(std::move(r.warning));
    if (r.value) out.text += value_text(*r.value);
  }
  out.text.append(text.substr(copied));
  return out;
}

namespace {

// Renders a list item or object member into `into`, collecting warnings in `out`; false
// (with out.error set) when it failed.
bool render_member(rendered_value& out, const boost::json::value& v, const render_scope& scope,
                   boost::json::value& into) {
  rendered_value child;
  child.warnings = std::move(out.warnings);
  render_into(child, v, scope);
  out.warnings = std::move(child.warnings);
  if (!child.ok()) {
    out.error = std::move(child.error);
    return false;
  }
  into = std::move(child.value);
  return true;
}

void render_into(rendered_value& out, const boost::json::value& v, const render_scope& scope) {
  if (!out.ok()) return;
  if (const auto* s = v.if_string()) {
    if (auto ref = sole_reference(*s)) {
      auto r = resolve(*ref, scope);
      if (!r.error.empty()) {
        out.error = std::move(r.error);
        return;
      }
      if (!r.warning.empty()) out.warnings.push_back(std::move(r.warning));
      out.value = r.value ? *r.value : boost::json::value(nullptr);
      return;
    }
    auto t = render_text(*s, scope);
    out.warnings.insert(out.warnings.end(), t.warnings.begin(), t.warnings.end());
    out.error = std::move(t.error);
    out.value = boost::json::string(t.text);
    return;
  }
  if (const auto* arr = v.if_array()) {
    boost::json::array rendered;
    for (const auto& item : *arr)
      if (!render_member(out, item, scope, rendered.emplace_back(nullptr))) return;
    out.value = std::move(rendered);
    return;
  }
  if (const auto* obj = v.if_object()) {
    boost::json::object rendered;
    for (const auto& kv : *obj)
      if (!render_member(out, kv.value(), scope, rendered[kv.key()])) return;
    out.value = std::move(rendered);
    return;
  }
  out.value = v;
}

}  // namespace

rendered_value render_value(const boost::json::value& v, const render_scope& scope) {
  rendered_value out;
  render_into(out, v, scope);
  return out;
}

}  // namespace arun::engine
