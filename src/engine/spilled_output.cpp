#include "spilled_output.hpp"

#include "output_value.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

namespace arun::engine {
namespace json = boost::json;

namespace {

constexpr std::string_view file_key = "arun_spilled_output";

}  // namespace

bool is_spilled(const json::value& v) noexcept {
  const auto* o = v.if_object();
  if (o == nullptr || o->size() != 3) return false;
  const auto* file = o->if_contains(file_key);
  return file && file->is_string() && o->contains("bytes") && o->contains("json");
}

bool holds_spilled(const json::value& v) noexcept {
  if (is_spilled(v)) return true;
  if (const auto* a = v.if_array()) {
    for (const auto& item : *a)
      if (holds_spilled(item)) return true;
  } else if (const auto* o = v.if_object()) {
    for (const auto& kv : *o)
      if (holds_spilled(kv.value())) return true;
  }
  return false;
}

json::value keep_output(std::string_view text, output_store* outputs, std::string_view instance) {
  const auto kept = trim(text);
  if (outputs == nullptr || outputs->spill_threshold() == 0 || kept.size() <= outputs->spill_threshold())
    return output_value(kept);
  const auto file = outputs->store(instance, std::string(kept));
  if (!file) return output_value(kept);
  return json::object{{file_key, *file}, {"bytes", kept.size()}, {"json", true}};
}

std::variant<json::value, std::string> load_spilled(const json::value& v, output_store& outputs) {
  if (is_spilled(v)) {
    const auto& o = v.get_object();
    const auto file = o.at(file_key).get_string();
    std::string why;
    auto text = outputs.load(file, why);
    if (!text) return "the stored output " + std::string(file) + " cannot be read: " + why;
    const auto* parse = o.at("json").if_bool();
    if (parse && !*parse) return json::value(json::string(*text));
    return output_value(*text);
  }
  if (!holds_spilled(v)) return v;
  if (const auto* a = v.if_array()) {
    json::array out;
    out.reserve(a->size());
    for (const auto& item : *a) {
      auto loaded = load_spilled(item, outputs);
      if (auto* why = std::get_if<std::string>(&loaded)) return std::move(*why);
      out.push_back(std::move(std::get<json::value>(loaded)));
    }
    return json::value(std::move(out));
  }
  json::object out;
  for (const auto& kv : v.get_object()) {
    auto loaded = load_spilled(kv.value(), outputs);
    if (auto* why = std::get_if<std::string>(&loaded)) return std::move(*why);
    out[kv.key()] = std::move(std::get<json::value>(loaded));
  }
  return json::value(std::move(out));
}

}  // namespace arun::engine
