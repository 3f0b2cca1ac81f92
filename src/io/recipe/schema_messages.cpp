#include "recipe/schema_messages.hpp"

#include "recipe/json_pointer.hpp"

#include <arun/value_format.hpp>

#include <boost/json/string.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <regex>
#include <string_view>

namespace arun::io {
namespace json = boost::json;
namespace {

// At most this many schema nodes are visited to find the keyword of one error: a schema of
// many alternatives and $refs could otherwise make the walk long.
constexpr std::size_t walk_budget = 10'000;

void append_text(std::string& out, std::string_view text, std::size_t most) {
  out += '\'';
  out += one_line_text(text, most, '\'');
  out += '\'';
}

// The entries of a list or mapping between `open` and `close`, each written by `each`; once
// the text reaches `until` characters the rest is cut with "…".
template <class Range, class Each>
void append_entries(std::string& out, char open, const Range& entries, char close, std::size_t until, Each each) {
  out += open;
  bool first = true;
  for (const auto& entry : entries) {
    if (!first) out += ", ";
    if (out.size() >= until) {
      out += "…";
      break;
    }
    first = false;
    each(entry);
  }
  out += close;
}

void append_value(std::string& out, const json::value& v, std::size_t most, std::size_t until) {
  switch (v.kind()) {
    case json::kind::string: return append_text(out, v.get_string(), most);
    case json::kind::int64: out += std::to_string(v.get_int64()); return;
    case json::kind::uint64: out += std::to_string(v.get_uint64()); return;
    case json::kind::double_: out += format_number(v.get_double()); return;
    case json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case json::kind::null: out += "null"; return;
    case json::kind::array:
      return append_entries(out, '[', v.get_array(), ']', until,
                            [&](const json::value& item) { append_value(out, item, most, until); });
    case json::kind::object:
      return append_entries(out, '{', v.get_object(), '}', until, [&](const json::key_value_pair& kv) {
        append_text(out, kv.key(), most);
        out += ": ";
        append_value(out, kv.value(), most, until);
      });
  }
}

bool is_name(std::string_view token) {
  if (token.empty() || std::isdigit(static_cast<unsigned char>(token.front()))) return false;
  for (char c : token)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool has_type(const json::value& v, std::string_view type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_bool();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_int64() || v.is_uint64() || (v.is_double() && std::trunc(v.get_double()) == v.get_double());
  return false;
}

bool type_allows(const json::value& type, const json::value& v) {
  if (const auto* one = type.if_string()) return has_type(v, *one);
  if (const auto* any = type.if_array()) {
    for (const auto& t : *any)
      if (t.is_string() && has_type(v, t.get_string())) return true;
    return false;
  }
  return true;
}

std::size_t characters(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

double number(const json::value& v) { return v.is_number() ? v.to_number<double>() : 0; }

// The properties of `o` (an object value) that `schema`'s properties and patternProperties
// do not name.
std::vector<std::string> unexpected_properties(const json::object& schema, const json::object& o) {
  std::vector<std::string> out;
  const auto* props = schema.if_contains("properties");
  const auto* patterns = schema.if_contains("patternProperties");
  for (const auto& kv : o) {
    if (props && props->is_object() && props->get_object().contains(kv.key())) continue;
    bool matched = false;
    if (patterns && patterns->is_object())
      for (const auto& p : patterns->get_object()) {
        const std::string pattern(p.key());
        matched = std::regex_search(kv.key().begin(), kv.key().end(), std::regex(pattern));
        if (matched) break;
      }
    if (!matched) out.emplace_back(kv.key());
  }
  return out;
}

// Whether `v` breaks `keyword` of `schema` (which has it).
bool breaks(std::string_view keyword, const json::object& schema, const json::value& v) {
  const auto& k = schema.at(keyword);
  if (keyword == "enum") {
    const auto* a = k.if_array();
    return a && std::find(a->begin(), a->end(), v) == a->end();
  }
  if (keyword == "const") return k != v;
  if (keyword == "type") return !type_allows(k, v);
  if (keyword == "minimum") return v.is_number() && number(v) < number(k);
  if (keyword == "exclusiveMinimum") return v.is_number() && number(v) <= number(k);
  if (keyword == "maximum") return v.is_number() && number(v) > number(k);
  if (keyword == "exclusiveMaximum") return v.is_number() && number(v) >= number(k);
  if (keyword == "minLength") return v.is_string() && characters(v.get_string()) < number(k);
  if (keyword == "maxLength") return v.is_string() && characters(v.get_string()) > number(k);
  if (keyword == "minItems") return v.is_array() && v.get_array().size() < number(k);
  if (keyword == "maxItems") return v.is_array() && v.get_array().size() > number(k);
  if (keyword == "minProperties") return v.is_object() && v.get_object().size() < number(k);
  if (keyword == "maxProperties") return v.is_object() && v.get_object().size() > number(k);
  if (keyword == "pattern") {
    if (!v.is_string() || !k.is_string()) return false;
    const std::string pattern(k.get_string());
    return !std::regex_search(v.get_string().begin(), v.get_string().end(), std::regex(pattern));
  }
  if (keyword == "additionalProperties")
    return k.is_bool() && !k.get_bool() && v.is_object() && !unexpected_properties(schema, v.get_object()).empty();
  return true;  // multipleOf, uniqueItems, format, not: valijson's word is taken
}

// The keyword a valijson description is about, by its opening words.
struct known_description {
  std::string_view opening;
  std::string_view keyword;
};

constexpr std::array known_descriptions = {
    known_description{"Failed to match against any enum values", "enum"},
    known_description{"Failed to match expected value set by 'const'", "const"},
    known_description{"Value type not permitted by 'type'", "type"},
    known_description{"Expected number greater than or equal to ", "minimum"},
    known_description{"Expected number greater than ", "exclusiveMinimum"},
    known_description{"Expected number less than or equal to ", "maximum"},
    known_description{"Expected number less than ", "exclusiveMaximum"},
    known_description{"String should be no fewer than ", "minLength"},
    known_description{"String should be no more than ", "maxLength"},
    known_description{"Array should contain no fewer than ", "minItems"},
    known_description{"Array should contain no more than ", "maxItems"},
    known_description{"Object should have no fewer than ", "minProperties"},
    known_description{"Object should have no more than ", "maxProperties"},
    known_description{"Failed to match regex specified by 'pattern'", "pattern"},
    known_description{"Object contains a property that could not be validated", "additionalProperties"},
    known_description{"Value should be a multiple of ", "multipleOf"},
    known_description{"Elements at indexes #", "uniqueItems"},
    known_description{"String should be a valid ", "format"},
    known_description{"Target should not validate against schema specified in 'not'", "not"},
};

// The subschemas that apply to the value at `path`, as valijson applies them: through $ref,
// allOf, anyOf, oneOf, if/then/else and dependencies at each place, then properties,
// patternProperties, additionalProperties, items and additionalItems down to the value.
class subschema_finder {
public:
  subschema_finder(const json::value& root, const json::value& instance, const std::vector<std::string>& path)
      : root_(root), path_(path) {
    places_.push_back(&instance);
    for (const auto& token : path) {
      const auto* next = places_.back() ? value_at(*places_.back(), std::vector<std::string>{token}) : nullptr;
      places_.push_back(next);
    }
  }

  std::vector<const json::object*> find() {
    if (places_.back()) visit(root_, 0);
    return std::move(found_);
  }

  const json::value* value() const { return places_.back(); }

private:
  void visit(const json::value& schema, std::size_t depth) {
    const auto* o = schema.if_object();
    if (!o || budget_ == 0) return;
    --budget_;
    if (const auto* ref = o->if_contains("$ref")) {  // valijson reads nothing beside it
      const auto* text = ref->if_string();
      if (!text || !text->starts_with('#')) return;
      const auto tokens = pointer_tokens(std::string_view(*text).substr(1));
      if (const auto* target = tokens ? value_at(root_, *tokens) : nullptr) visit(*target, depth);
      return;
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"})
      if (const auto* a = o->if_contains(key); a && a->is_array())
        for (const auto& sub : a->get_array()) visit(sub, depth);
    for (const char* key : {"if", "then", "else"})
      if (const auto* sub = o->if_contains(key)) visit(*sub, depth);
    if (const auto* deps = o->if_contains("dependencies"); deps && deps->is_object())
      for (const auto& dep : deps->get_object()) visit(dep.value(), depth);
    if (depth == path_.size()) {
      found_.push_back(o);
      return;
    }
    const auto& token = path_[depth];
    if (places_[depth]->is_object()) {
      bool named = false;
      if (const auto* props = o->if_contains("properties"); props && props->is_object())
        if (const auto* sub = props->get_object().if_contains(token)) {
          named = true;
          visit(*sub, depth + 1);
        }
      if (const auto* patterns = o->if_contains("patternProperties"); patterns && patterns->is_object())
        for (const auto& p : patterns->get_object()) {
          const std::string pattern(p.key());
          if (!std::regex_search(token, std::regex(pattern))) continue;
          named = true;
          visit(p.value(), depth + 1);
        }
      if (const auto* more = o->if_contains("additionalProperties"); more && !named) visit(*more, depth + 1);
    } else if (places_[depth]->is_array()) {
      const auto index = static_cast<std::size_t>(std::stoull(token));
      const auto* items = o->if_contains("items");
      if (items && items->is_array()) {
        if (index < items->get_array().size()) visit(items->get_array()[index], depth + 1);
        else if (const auto* more = o->if_contains("additionalItems")) visit(*more, depth + 1);
      } else if (items) {
        visit(*items, depth + 1);
      }
    }
  }

  const json::value& root_;
  const std::vector<std::string>& path_;
  std::vector<const json::value*> places_;  // the value at each prefix of the path
  std::vector<const json::object*> found_;
  std::size_t budget_ = walk_budget;
};

std::string said(std::string_view keyword, const json::object& schema, const json::value& v) {
  const auto value = shown_value(v);
  const auto& k = schema.at(keyword);
  auto limit = [&](std::string_view what) {
    return value + " is too " + std::string(what) + " (" + std::string(keyword) + ": " + shown_value(k) + ")";
  };
  if (keyword == "enum") return value + " is not one of " + shown_value(k, 200);
  if (keyword == "const") return shown_value(k) + " was expected, not " + value;
  if (keyword == "type") {
    std::string types;
    if (const auto* any = k.if_array()) {
      for (const auto& t : *any) types += (types.empty() ? "" : ", ") + shown_value(t);
    } else {
      types = shown_value(k);
    }
    return value + " is not of type " + types;
  }
  if (keyword == "minimum") return value + " is less than the minimum of " + shown_value(k);
  if (keyword == "exclusiveMinimum") return value + " is less than or equal to the minimum of " + shown_value(k);
  if (keyword == "maximum") return value + " is greater than the maximum of " + shown_value(k);
  if (keyword == "exclusiveMaximum") return value + " is greater than or equal to the maximum of " + shown_value(k);
  if (keyword == "minLength" || keyword == "minItems") return limit("short");
  if (keyword == "maxLength" || keyword == "maxItems") return limit("long");
  if (keyword == "minProperties")
    return value + " does not have enough properties (minProperties: " + shown_value(k) + ")";
  if (keyword == "maxProperties") return value + " has too many properties (maxProperties: " + shown_value(k) + ")";
  if (keyword == "pattern") return value + " does not match " + shown_value(k, 200);
  if (keyword == "multipleOf") return value + " is not a multiple of " + shown_value(k);
  if (keyword == "uniqueItems") return value + " has non-unique elements";
  if (keyword == "format") return value + " is not a " + shown_value(k);
  if (keyword == "not") return value + " should not be valid under " + shown_value(k, 200);
  // additionalProperties
  const auto extra = unexpected_properties(schema, v.get_object());
  std::string names;
  for (const auto& name : extra) names += (names.empty() ? "" : ", ") + shown_value(json::string(name));
  return "Additional properties are not allowed (" + names + (extra.size() == 1 ? " was" : " were") + " unexpected)";
}

}  // namespace

std::string shown_value(const json::value& v, std::size_t most) {
  std::string out;
  append_value(out, v, most, most);
  return out;
}

std::string json_path(const json::value& instance, const std::vector<std::string>& path) {
  std::string out = "$";
  const json::value* at = &instance;
  for (const auto& token : path) {
    if (at && at->is_array()) out += "[" + token + "]";
    else if (is_name(token)) out += "." + token;
    else out += "[" + shown_value(json::string(token)) + "]";
    at = at ? value_at(*at, std::vector<std::string>{token}) : nullptr;
  }
  return out;
}

std::string violation_wording::operator()(const std::vector<std::string>& path, const std::string& description) {
  static constexpr std::string_view required = "Missing required property '";
  if (description.starts_with(required)) {
    const auto end = description.rfind('\'');
    if (end <= required.size()) return description;
    return shown_value(json::string(description.substr(required.size(), end - required.size()))) +
           " is a required property";
  }
  try {
    subschema_finder finder(schema_, instance_, path);
    const auto* value = finder.value();
    if (!value) return description;
    if (description.starts_with("Failed to validate against any schemas allowed by anyOf") ||
        description.starts_with("Failed to validate against any child schemas allowed by oneOf"))
      return shown_value(*value) + " is not valid under any of the given schemas";
    if (description.starts_with("Failed to validate against exactly one child schema"))
      return shown_value(*value) + " is valid under more than one of the given schemas";
    const auto known = std::find_if(known_descriptions.begin(), known_descriptions.end(),
                                    [&](const auto& d) { return description.starts_with(d.opening); });
    if (known == known_descriptions.end()) return description;
    const auto keyword = known->keyword;
    std::vector<const json::object*> with, failing;
    for (const auto* s : finder.find()) {
      if (!s->contains(keyword)) continue;
      with.push_back(s);
      if (breaks(keyword, *s, *value)) failing.push_back(s);
    }
    if (with.empty() || (keyword == "additionalProperties" && failing.empty())) return description;
    auto& n = seen_[json_path(instance_, path) + " " + std::string(keyword)];
    const auto* chosen = n < failing.size() ? failing[n] : failing.empty() ? with.front() : failing.front();
    ++n;
    return said(keyword, *chosen, *value);
  } catch (const std::exception&) {  // a pattern std::regex gives up on: valijson's words
    return description;
  }
}

}  // namespace arun::io
