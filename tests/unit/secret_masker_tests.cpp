// Secret masking (secret_masker.hpp): every occurrence, the longest secret first, the forms a
// value takes inside JSON text and line by line, and JSON documents masked in place.
#include <catch2/catch.hpp>

#include "output/secret_masker.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

using arun::io::secret_masker;

TEST_CASE("a secret is masked wherever it occurs; nothing else changes", "[secrets]") {
  secret_masker m;
  CHECK(m.empty());
  CHECK(m.mask("hunter2") == "hunter2");
  m.add("hunter2");
  m.add("");  // masks nothing
  CHECK_FALSE(m.empty());
  CHECK(m.mask("pw=hunter2; again hunter2hunter2.") == "pw=***; again ******.");
  CHECK(m.mask("hunter") == "hunter");
  CHECK(m.clean("nothing here"));
  CHECK_FALSE(m.clean("xhunter2x"));
}

TEST_CASE("a secret that contains another is masked whole", "[secrets]") {
  secret_masker m;
  m.add("abc");
  m.add("xxabcxx");
  CHECK(m.mask("1 xxabcxx 2 abc") == "1 *** 2 ***");
}

TEST_CASE("a secret is masked as JSON text escapes it, and line by line when it spans lines", "[secrets]") {
  secret_masker m;
  m.add("p\"a\\ss\u00e9");
  m.add("-----BEGIN KEY-----\nMIIEabc123\n-----END KEY-----\n");
  CHECK(m.mask(R"({"v":"p\"a\\ssé"})") == R"({"v":"***"})");
  CHECK(m.mask("MIIEabc123") == "***");
  CHECK(m.mask("line -----END KEY----- here") == "line *** here");
  CHECK(m.mask("-----BEGIN KEY-----\nMIIEabc123\n-----END KEY-----\n") == "***");
}

TEST_CASE("JSON documents are masked in their string values and stay valid and readable", "[secrets]") {
  secret_masker m;
  m.add("s3cr3t");
  m.add("a\",\"b");  // raw, it would match across JSON structure; masked per string it cannot
  auto v = boost::json::parse(R"({"list":["a","b","x s3cr3t y"],"s3cr3t":{"n":1,"t":"a\",\"b"}})");
  m.mask_json(v);
  CHECK(boost::json::serialize(v) == R"({"list":["a","b","x *** y"],"s3cr3t":{"n":1,"t":"***"}})");
}
