#include <catch2/catch.hpp>

#include "output_value.hpp"

#include <arun/engine.hpp>

#include <boost/json/parse.hpp>

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
