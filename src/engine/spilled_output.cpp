#include "spilled_output.hpp"

#include "output_value.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <random>

namespace arun {
namespace json = boost::json;

namespace {

// The single key of a reference: 128 random bits drawn once per process and never written
// anywhere (to_compact_json writes the stand-in instead), so no step, file or earlier session
// can know it (docs/security.md, "Outputs are data, never references").
const std::string& marker() {
  static const std::string key = [] {
    std::random_device random;
    static constexpr char digits[] = "0123456789abcdef";
    std::string k = "arun stored output ";
    for (int i = 0; i < 4; ++i) {
      auto word = random();
      for (int j = 0; j < 8; ++j, word >>= 4) k += digits[word & 0xF];
    }
    return k;
  }();
  return key;
}

const json::object* reference_fields(const json::value& v) noexcept {
  const auto* o = v.if_object();
  if (o == nullptr || o->size() != 1 || o->begin()->key() != marker()) return nullptr;
  return o->begin()->value().if_object();
}

}  // namespace

std::optional<stored_output> as_stored_output(const json::value& v) {
  const auto* fields = reference_fields(v);
  if (fields == nullptr) return std::nullopt;
  stored_output s;
  if (const auto* f = fields->if_contains("file"); f && f->is_string()) s.file = f->get_string();
  if (const auto* b = fields->if_contains("bytes"); b && b->is_uint64()) s.bytes = b->get_uint64();
  if (const auto* j = fields->if_contains("json"); j && j->is_bool()) s.json = j->get_bool();
  return s;
}

bool is_stored_output(const json::value& v) noexcept { return reference_fields(v) != nullptr; }

bool holds_stored_output(const json::value& v) noexcept {
  if (reference_fields(v)) return true;
  if (const auto* a = v.if_array()) {
    for (const auto& item : *a)
      if (holds_stored_output(item)) return true;
  } else if (const auto* o = v.if_object()) {
    for (const auto& kv : *o)
      if (holds_stored_output(kv.value())) return true;
  }
  return false;
}

json::value stored_output_reference(const stored_output& s) {
  json::object fields{{"file", s.file}, {"bytes", s.bytes}, {"json", s.json}};
  json::object ref;
  ref[marker()] = std::move(fields);
  return ref;
}

json::value stored_output_stand_in(const stored_output& s, std::string_view reason) {
  return json::object{
      {"arun_output_omitted", json::object{{"bytes", s.bytes}, {"file", "outputs/" + s.file}, {"reason", std::string(reason)}}}};
}

json::value replace_stored_outputs(const json::value& v, const std::function<json::value(const stored_output&)>& replace) {
  if (const auto s = as_stored_output(v)) return replace(*s);
  if (!holds_stored_output(v)) return v;
  if (const auto* a = v.if_array()) {
    json::array out;
    out.reserve(a->size());
    for (const auto& item : *a) out.push_back(replace_stored_outputs(item, replace));
    return out;
  }
  json::object out;
  for (const auto& kv : v.get_object()) out[kv.key()] = replace_stored_outputs(kv.value(), replace);
  return out;
}

std::optional<json::value> load_stored_output(const stored_output& s, output_store& outputs, std::string& why) {
  auto text = outputs.load(s.file, s.bytes, why);
  if (!text) return std::nullopt;
  // Whatever the store did, never more nor less than what was stored.
  if (text->size() != s.bytes) {
    why = "it holds " + std::to_string(text->size()) + " bytes, not the " + std::to_string(s.bytes) + " stored";
    return std::nullopt;
  }
  if (!s.json) return json::value(json::string(*text));
  return engine::output_value(*text);
}

}  // namespace arun

namespace arun::engine {
namespace json = boost::json;

bool is_spilled(const json::value& v) noexcept { return is_stored_output(v); }

bool holds_spilled(const json::value& v) noexcept { return holds_stored_output(v); }

json::value keep_output(std::string_view text, output_store* outputs, std::string_view instance) {
  const auto kept = trim(text);
  if (outputs == nullptr || outputs->spill_threshold() == 0 || kept.size() <= outputs->spill_threshold())
    return output_value(kept);
  const auto file = outputs->store(instance, std::string(kept));
  if (!file) return output_value(kept);
  return stored_output_reference({*file, kept.size(), true});
}

std::variant<json::value, std::string> load_spilled(const json::value& v, output_store& outputs) {
  std::string failure;
  auto loaded = replace_stored_outputs(v, [&](const stored_output& s) -> json::value {
    if (!failure.empty()) return nullptr;
    std::string why;
    auto value = load_stored_output(s, outputs, why);
    if (!value) {
      failure = "the stored output outputs/" + s.file + " cannot be read: " + why;
      return nullptr;
    }
    return std::move(*value);
  });
  if (!failure.empty()) return failure;
  return loaded;
}

}  // namespace arun::engine
