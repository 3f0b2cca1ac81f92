#include <catch2/catch.hpp>

#include "output_value.hpp"

#include <arun/engine.hpp>
#include <arun/value_format.hpp>

#include <cmath>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

using arun::engine::output_value;

TEST_CASE("output that is JSON as a whole is stored typed") {
  CHECK(output_value("5\n") == boost::json::value(5));
  CHECK(output_value("  {\"a\": [1, true]}  \n") == boost::json::parse(R"({"a":[1,true]})"));
  CHECK(output_value("null") == boost::json::value(nullptr));
  CHECK(output_value("\"quoted\"") == boost::json::value("quoted"));
}

TEST_CASE("other output is stored as the trimmed string") {
  CHECK(output_value("  hello world \n\n") == boost::json::value("hello world"));
  CHECK(output_value("5 apples") == boost::json::value("5 apples"));
  CHECK(output_value("{not json") == boost::json::value("{not json"));
  CHECK(output_value("\n\t ") == boost::json::value(""));
}

TEST_CASE("session ids look like 20261121-134501-3f9a2c") {
  using namespace std::chrono;
  const auto t = sys_days{year{2026} / 11 / 21} + hours{13} + minutes{45} + seconds{1};
  CHECK(arun::make_session_id(t, 0x3f9a2c) == "20261121-134501-3f9a2c");
  CHECK(arun::make_session_id(t, 0xff000001) == "20261121-134501-000001");
}

TEST_CASE("numbers format in shortest round-trip form, never 1.5E0") {
  CHECK(arun::format_number(1.5) == "1.5");
  CHECK(arun::format_number(100000.0) == "100000.0");
  CHECK(arun::format_number(0.1) == "0.1");
  CHECK(arun::format_number(1e300) == "1e+300");
  CHECK(arun::format_number(1e16) == "1e+16");
  CHECK(arun::format_number(1234567890123456.0) == "1234567890123456.0");
  CHECK(arun::format_number(0.0001) == "0.0001");
  CHECK(arun::format_number(0.00001) == "1e-05");
  CHECK(arun::format_number(0.0) == "0.0");
  CHECK(arun::format_number(-2.0) == "-2.0");
  CHECK(arun::format_number(std::nan("")) == "null");
}

TEST_CASE("compact JSON has no spaces and keeps integers integral") {
  const auto v = boost::json::parse(R"({"a": [1, 2.5, 3.0, -4], "b": {"c": null, "d": "x\"y"}, "e": true})");
  CHECK(arun::to_compact_json(v) == R"({"a":[1,2.5,3.0,-4],"b":{"c":null,"d":"x\"y"},"e":true})");
  CHECK(arun::to_compact_json(boost::json::value(18446744073709551615ull)) == "18446744073709551615");
  // Strings are escaped exactly as Boost.JSON does, whichever path they take (plain text is
  // copied as it is): every byte alone, in a key and in a value.
  for (int c = 0; c < 256; ++c) {
    const std::string text = "a" + std::string(1, static_cast<char>(c)) + "b";
    INFO(c);
    CHECK(arun::to_compact_json(boost::json::value(text)) == boost::json::serialize(boost::json::value(text)));
    const boost::json::object o{{text, text}};
    CHECK(arun::to_compact_json(o) == boost::json::serialize(o));
  }
}

// Issue 33, number corner: Boost.JSON 1.81 read 123456789012345678901234567890 as
// 1.2345678901234568e+29, 1e400 as infinity (written as null), and 1795664842.1989675 one unit
// off. A number stays exact: a double when it holds the number, else the number's text.
TEST_CASE("output numbers stay exact: beyond a double they are kept as their text, never null") {
  using boost::json::value;
  CHECK(output_value("123456789012345678901234567890") == value("123456789012345678901234567890"));
  CHECK(output_value("1e400") == value("1e400"));
  CHECK(output_value("-1e400") == value("-1e400"));
  CHECK(output_value("1e-400") == value("1e-400"));
  CHECK(output_value("0.30000000000000000001") == value("0.30000000000000000001"));
  CHECK(output_value("18446744073709551616") == value("18446744073709551616"));  // 2^64
  const auto drift = output_value("1795664842.1989675");
  REQUIRE(drift.is_double());
  CHECK(arun::format_number(drift.get_double()) == "1795664842.1989675");
  CHECK(output_value("1.5") == value(1.5));
  CHECK(output_value("1.50") == value(1.5));
  CHECK(output_value("15e-1") == value(1.5));
  CHECK(output_value("1E2") == value(100.0));
  CHECK(output_value("-0.0").get_double() == 0.0);
  CHECK(output_value("0.1") == value(0.1));
  CHECK(output_value("9223372036854775807") == value(std::int64_t{9223372036854775807}));
  CHECK(output_value("18446744073709551615") == value(std::uint64_t{18446744073709551615u}));
  CHECK(output_value("-9223372036854775808") == value(std::int64_t{-9223372036854775807 - 1}));
  CHECK(output_value(R"({"big": 123456789012345678901234567890, "list": [1e400, 2.5]})") ==
        boost::json::parse(R"({"big": "123456789012345678901234567890", "list": ["1e400", 2.5]})"));
  CHECK(arun::to_compact_json(output_value("[1e400]")) == R"(["1e400"])");
}

TEST_CASE("parse_json_exact reads what boost::json::parse reads, and refuses what it refuses") {
  boost::system::error_code ec;
  CHECK(arun::parse_json_exact(R"( {"a": [1, -2, 3.25, "x", null, true]} )", ec) ==
        boost::json::parse(R"({"a": [1, -2, 3.25, "x", null, true]})"));
  CHECK_FALSE(ec);
  for (const auto* bad : {"{", "[1,]", "1 2", "", "nul", "01"}) {
    boost::system::error_code e;
    (void)arun::parse_json_exact(bad, e);
    CHECK(e);
  }
  // Every double arun writes reads back as the same double.
  for (const double d : {1795664842.1989675, 0.1, 1e-300, 1.7976931348623157e308, 5e-324, 123.456e10}) {
    boost::system::error_code e;
    const auto back = arun::parse_json_exact(arun::format_number(d), e);
    REQUIRE_FALSE(e);
    REQUIRE(back.is_double());
    CHECK(back.get_double() == d);
  }
}
