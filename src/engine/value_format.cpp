#include <cstdint>
#include <arun/value_format.hpp>

#include <arun/stored_output.hpp>

#include <boost/json/serialize.hpp>

#include <charconv>
#include <utility>
#include <cmath>

namespace arun {
namespace {

void append_json(std::string& out, const boost::json::value& v);

// Printable ASCII other than `"` and `\` stands in JSON as it is: most keys and values are
// such text, and boost::json::serialize builds a string per call (a journal line and an event
// hold a dozen strings each). Anything else goes through Boost.JSON's escaping.
bool needs_no_escape(boost::json::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

void append_string(std::string& out, boost::json::string_view s) {
  if (!needs_no_escape(s)) {
    out += boost::json::serialize(s);
    return;
  }
  out += '"';
  out.append(s.data(), s.size());
  out += '"';
}

template <typename Integer>
void append_integer(std::string& out, Integer i) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, i);
  out.append(buf, end);
}

void append_json(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: append_integer(out, v.get_int64()); break;
    case boost::json::kind::uint64: append_integer(out, v.get_uint64()); break;
    case boost::json::kind::double_: out += format_number(v.get_double()); break;
    case boost::json::kind::string: append_string(out, v.get_string()); break;
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!std::exchange(first, false)) out += ',';
        append_json(out, item);
      }
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      // A stored output's reference is never written as it is held: its marker must stay
      // unknown (stored_output.hpp).
      if (const auto stored = as_stored_output(v)) {
        append_json(out, stored_output_stand_in(*stored, "not loaded"));
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!std::exchange(first, false)) out += ',';
        append_string(out, kv.key());
        out += ':';
        append_json(out, kv.value());
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string format_number(double d) {
  if (!std::isfinite(d)) return "null";
  // Like Python's repr: plain digits between 1e-4 and 1e16, an exponent outside.
  const double magnitude = std::fabs(d);
  const auto style = (magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) ? std::chars_format::fixed
                                                                                 : std::chars_format::scientific;
  char buf[400];  // the longest fixed form of a double below 1e16 fits easily
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, style);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string to_compact_json(const boost::json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

std::string one_line_text(std::string_view text, std::size_t most, char quote) {
  std::string out;
  std::size_t chars = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c & 0xC0) != 0x80 && chars++ == most) {  // cut where a character starts
      out += "…";
      break;
    }
    if (quote != 0 && (ch == quote || ch == '\\')) {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    } else {
      out += ch;
    }
  }
  return out;
}

std::string item_label(const boost::json::value& item) {
  constexpr std::size_t most = 60;
  if (const auto* s = item.if_string()) return one_line_text(*s, most);
  return one_line_text(to_compact_json(item), most);
}

std::string content_hash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = digits[h & 0xF];
  return out;
}

}  // namespace arun
