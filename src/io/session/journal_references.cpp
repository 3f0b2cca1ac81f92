#include "session/journal_references.hpp"

#include "session/stored_file.hpp"

#include <arun/stored_output.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace arun::io {
namespace json = boost::json;

namespace {

// RFC 6901: `~` and `/` inside a key are escaped.
std::string pointer_token(json::string_view key) {
  std::string token;
  for (const char c : key) {
    if (c == '~') token += "~0";
    else if (c == '/') token += "~1";
    else token += c;
  }
  return token;
}

void take(json::value& v, const std::string& at, json::array& out) {
  if (const auto s = as_stored_output(v)) {
    out.push_back(json::object{{"at", at}, {"file", s->file}, {"bytes", s->bytes}, {"json", s->json}});
    v = stored_output_stand_in(*s, "kept in the session's outputs/");
    return;
  }
  if (!holds_stored_output(v)) return;
  if (auto* a = v.if_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) take((*a)[i], at + "/" + std::to_string(i), out);
  } else if (auto* o = v.if_object()) {
    for (auto& kv : *o) take(kv.value(), at + "/" + pointer_token(kv.key()), out);
  }
}

bool inside_record_values(std::string_view at) {
  return at.starts_with("/result/") || at.starts_with("/delta/");
}

}  // namespace

json::array take_references(json::object& record) {
  json::array out;
  for (const char* member : {"result", "delta"})
    if (auto* v = record.if_contains(member)) take(*v, std::string("/") + member, out);
  return out;
}

void restore_references(json::object& record, const json::value& entries) {
  const auto* list = entries.if_array();
  if (list == nullptr) return;
  json::value whole(std::move(record));
  for (const auto& e : *list) {
    const auto* o = e.if_object();
    if (o == nullptr) continue;
    const auto* at = o->if_contains("at");
    const auto* file = o->if_contains("file");
    const auto* bytes = o->if_contains("bytes");
    const auto* is_json = o->if_contains("json");
    if (!at || !at->is_string() || !inside_record_values(std::string_view(at->get_string())) || !file || !file->is_string() ||
        !plain_file_name(std::string(file->get_string())) || !bytes || !(bytes->is_uint64() || bytes->is_int64()) ||
        !is_json || !is_json->is_bool())
      continue;
    const auto size = bytes->is_uint64() ? bytes->get_uint64() : bytes->get_int64();
    if (bytes->is_int64() && bytes->get_int64() < 0) continue;
    boost::system::error_code ec;
    auto* place = whole.find_pointer(at->get_string(), ec);
    if (place == nullptr || ec) continue;
    *place = stored_output_reference({std::string(file->get_string()), static_cast<std::uint64_t>(size), is_json->get_bool()});
  }
  record = std::move(whole.as_object());
}

}  // namespace arun::io
