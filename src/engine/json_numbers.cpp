// Numbers read from JSON as exactly as they were written (include/arun/value_format.hpp,
// parse_json_exact; docs/reference/formats.md, "Numbers"). Boost.JSON 1.81 reads a number
// beyond the integer range into a double (123456789012345678901234567890 became
// 1.2345678901234568e+29), 1e400 into infinity (written as null), and rounds some decimals
// one unit off in its fast path (1795664842.1989675 read back as …677).
#include <arun/value_format.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace arun {
namespace json = boost::json;

namespace {

// A decimal number's value as digits without leading or trailing zeros and a power of ten:
// two texts of the same number compare equal (`1.50` and `15e-1`; every zero is {"", 0}).
struct decimal {
  bool negative = false;
  std::string digits;
  long long exponent = 0;
  bool operator==(const decimal&) const = default;
};

decimal decimal_of(std::string_view t) {
  decimal d;
  std::size_t i = 0;
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) d.negative = t[i++] == '-';
  long long fraction_digits = 0;
  bool in_fraction = false;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      in_fraction = true;
      continue;
    }
    d.digits += t[i];
    if (in_fraction) ++fraction_digits;
  }
  long long exponent = 0;
  if (i < t.size()) {
    ++i;
    bool negative = false;
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) negative = t[i++] == '-';
    // Saturated: an exponent this large is out of any double's range either way.
    for (; i < t.size(); ++i) exponent = std::min(exponent * 10 + (t[i] - '0'), 1'000'000'000LL);
    if (negative) exponent = -exponent;
  }
  d.exponent = exponent - fraction_digits;
  const auto first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) return {};
  d.digits.erase(0, first);
  const auto last = d.digits.find_last_not_of('0');
  d.exponent += static_cast<long long>(d.digits.size() - 1 - last);
  d.digits.erase(last + 1);
  return d;
}

// The double `text` stands for when it holds that number exactly, as its shortest text would
// write it; none when it does not (more digits than a double keeps, out of range).
std::optional<double> exact_double(std::string_view text) {
  double d = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(d)) return std::nullopt;
  char shortest[64];
  // Scientific: the shortest digits that read back as `d` (fixed notation would spell out a
  // large double's exact binary value, 2^64 as 18446744073709551616).
  const auto written = std::to_chars(shortest, shortest + sizeof shortest, d, std::chars_format::scientific);
  if (decimal_of(text) != decimal_of(std::string_view(shortest, static_cast<std::size_t>(written.ptr - shortest))))
    return std::nullopt;
  return d;
}

// boost::json's own value-building handler, with numbers checked against their text.
struct exact_handler {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value_stack st;
  std::string number;  // the parts of a number split across buffers

  explicit exact_handler(json::storage_ptr sp) : st(std::move(sp)) {}

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return true; }
  bool on_object_end(std::size_t n, json::error_code&) { return st.push_object(n), true; }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) { return st.push_array(n), true; }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) { return st.push_chars(s), true; }
  bool on_key(json::string_view s, std::size_t, json::error_code&) { return st.push_key(s), true; }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) { return st.push_chars(s), true; }
  bool on_string(json::string_view s, std::size_t, json::error_code&) { return st.push_string(s), true; }
  bool on_number_part(json::string_view s, json::error_code&) { return number.append(s.data(), s.size()), true; }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) { return number.clear(), st.push_int64(i), true; }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) { return number.clear(), st.push_uint64(u), true; }
  bool on_double(double, json::string_view s, json::error_code&) {
    number.append(s.data(), s.size());
    if (const auto d = exact_double(number)) st.push_double(*d);
    else st.push_string(number);  // kept exactly, as its text
    number.clear();
    return true;
  }
  bool on_bool(bool b, json::error_code&) { return st.push_bool(b), true; }
  bool on_null(json::error_code&) { return st.push_null(), true; }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

}  // namespace

json::value parse_json_exact(std::string_view text, boost::system::error_code& ec, const json::parse_options& options) {
  json::basic_parser<exact_handler> p(options, json::storage_ptr());
  p.handler().st.reset();
  const auto n = p.write_some(false, text.data(), text.size(), ec);
  if (!ec && n < text.size()) ec = json::error::extra_data;
  if (ec) return nullptr;
  return p.handler().st.release();
}

}  // namespace arun
