// JSON text arun writes is valid UTF-8 whatever bytes a value holds, and reads back exactly.
#include <catch2/catch.hpp>

#include "files/json_text.hpp"

#include <boost/json/object.hpp>

#include <string>

using arun::io::parse_json_text;
using arun::io::to_json_text;

namespace {

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) >= 0x80) return false;  // the escape keeps our texts ASCII here
  return true;
}

}  // namespace

TEST_CASE("bytes that are not UTF-8 are written as udcXY escapes (a backslash, u, dc and the byte) and read back exactly") {
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  const std::vector<std::string> values = {"caf\xe9", all, "\xed\xa0\x80 encoded surrogate", "\xc0\xaf overlong",
                                           "\xf4\x90\x80\x80 past U+10FFFF", "literal \\udce9 text", "tail \xe2\x82"};
  for (const auto& text : values) {
    INFO(text);
    boost::json::object o{{"k" + text, text}};
    const auto json = to_json_text(o);
    boost::system::error_code ec;
    const auto back = parse_json_text(json, ec);
    REQUIRE_FALSE(ec);
    CHECK(back == boost::json::value(o));
  }
  CHECK(to_json_text(boost::json::value("caf\xe9")) == "\"caf\\udce9\"");
  CHECK(valid_utf8(to_json_text(boost::json::value(all.substr(0, 127) + "\xff"))));
  // Valid UTF-8 stays as it is; a foreign writer's surrogate pair stays a character.
  CHECK(to_json_text(boost::json::value("caf\xc3\xa9 \xf0\x9f\x98\x80")) == "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
  boost::system::error_code ec;
  CHECK(parse_json_text("\"\\ud83d\\ude00\"", ec) == boost::json::value("\xf0\x9f\x98\x80"));
  // Files of an older arun held the raw bytes: still read.
  CHECK(parse_json_text("\"caf\xe9\"", ec) == boost::json::value("caf\xe9"));
}
