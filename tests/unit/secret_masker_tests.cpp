// Secret masking (secret_masker.hpp): every occurrence, the longest secret first, the forms a
// value takes inside JSON text and line by line, and JSON documents masked in place.
#include <catch2/catch.hpp>

#include "output/secret_masker.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

using arun::io::secret_masker;

TEST_CASE("a secret is masked wherever it occurs, nothing else changes", "[secrets]") {
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
  // PEM armour is the same in every key: not a secret on its own.
  CHECK(m.mask("line -----END KEY----- here") == "line -----END KEY----- here");
  CHECK(m.mask("-----BEGIN KEY-----\nMIIEabc123\n-----END KEY-----\n") == "***");
}

TEST_CASE("JSON documents are masked in their keys and string values and stay valid and readable", "[secrets]") {
  secret_masker m;
  m.add("s3cr3t");
  m.add("a\",\"b");  // raw, it would match across JSON structure; masked per string it cannot
  auto v = boost::json::parse(R"({"list":["a","b","x s3cr3t y"],"s3cr3t":{"n":1,"t":"a\",\"b"}})");
  m.mask_json(v);
  CHECK(boost::json::serialize(v) == R"({"list":["a","b","x *** y"],"***":{"n":1,"t":"***"}})");
}

namespace {

const std::string pem_key =
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACB/hx+k2Z3fHk7cq1ZkZyE4m9v0yWJX2d4u8rE7mBvqFgAAAJgq6m1yKupt\n"
    "  short\n"
    "-----END OPENSSH PRIVATE KEY-----\n";

}  // namespace

TEST_CASE("each line of a multi-line secret is masked on its own, short lines and PEM armour are not",
          "[secrets]") {
  secret_masker m;
  m.add(pem_key);
  CHECK(m.mask("got b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW!") == "got ***!");
  CHECK_FALSE(m.clean("QyNTUxOQAAACB/hx+k2Z3fHk7cq1ZkZyE4m9v0yWJX2d4u8rE7mBvqFgAAAJgq6m1yKupt"));
  // Fewer than min_line_bytes characters, spaces trimmed: ordinary text.
  CHECK(m.clean("a short line"));
  CHECK(m.clean("-----BEGIN OPENSSH PRIVATE KEY-----"));
  // An indented copy of a line is still the line.
  CHECK(m.mask("    QyNTUxOQAAACB/hx+k2Z3fHk7cq1ZkZyE4m9v0yWJX2d4u8rE7mBvqFgAAAJgq6m1yKupt") == "    ***");
}

TEST_CASE("a multi-line secret is masked with CRLF line endings and as JSON escapes it", "[secrets]") {
  secret_masker m;
  m.add("first-line-abc\nsecond-line-def");
  CHECK(m.mask("x first-line-abc\r\nsecond-line-def y") == "x *** y");
  CHECK(m.mask(R"({"k":"first-line-abc\nsecond-line-def"})") == R"({"k":"***"})");
  CHECK(m.mask(R"({"k":"first-line-abc\r\nsecond-line-def"})") == R"({"k":"***"})");
  // A CRLF secret is masked in its LF form too.
  secret_masker crlf;
  crlf.add("one\r\ntwo");
  CHECK(crlf.mask("<one\ntwo>") == "<***>");
  CHECK(crlf.mask(R"("one\r\ntwo")") == R"("***")");
}

TEST_CASE("a secret is masked in the JSON escapes of common serialisers", "[secrets]") {
  secret_masker m;
  m.add("p\"a\\s/s\u00e9\x01\xf0\x9f\x94\x91");
  // Boost.JSON (arun's own), Python's ensure_ascii in both cases, `\/`, JSON inside JSON.
  CHECK(m.mask(R"("p\"a\\s/sé\u0001🔑")") == R"("***")");
  CHECK(m.mask(R"("p\"a\\s/s\u00e9\u0001\ud83d\udd11")") == R"("***")");
  CHECK(m.mask(R"("p\"a\\s/s\u00E9\u0001\uD83D\uDD11")") == R"("***")");
  CHECK(m.mask(R"("p\"a\\s\/sé\u0001🔑")") == R"("***")");
  CHECK(m.mask(R"("p\\\"a\\\\s/sé\\u0001🔑")") == R"("***")");
  // Transformed forms are not secret forms: base64 of the value passes.
  CHECK(m.clean("cCJhXHMvc8OpAfCflJE="));
}

TEST_CASE("a secret printed as a JSON key is masked, keys that mask alike stay apart", "[secrets]") {
  secret_masker m;
  m.add("tok-AAAA1111");
  m.add("tok-BBBB2222");
  auto v = boost::json::parse(R"({"tok-AAAA1111":1,"tok-BBBB2222":2,"x":{"k tok-AAAA1111":[{"tok-AAAA1111":3}]}})");
  m.mask_json(v);
  CHECK(boost::json::serialize(v) == R"({"***":1,"***#2":2,"x":{"k ***":[{"***":3}]}})");
}

TEST_CASE("safe_cut and safe_start never keep part of a secret that straddles the cut", "[secrets]") {
  secret_masker m;
  m.add("SECRETVALUE1");
  const std::string text = "0123456789SECRETVALUE1abc";
  // A cut inside the secret moves to its start; one outside it stays.
  for (std::size_t at = 11; at < 22; ++at) CHECK(m.safe_cut(text, at) == 10);
  CHECK(m.safe_cut(text, 10) == 10);
  CHECK(m.safe_cut(text, 22) == 22);
  CHECK(m.safe_cut(text, 5) == 5);
  for (std::size_t at = 11; at < 22; ++at) CHECK(m.safe_start(text, at) == 22);
  CHECK(m.safe_start(text, 22) == 22);
  CHECK(m.safe_start(text, 3) == 3);
  // Overlapping occurrences: the cut moves until none straddles.
  secret_masker overlap;
  overlap.add("abcdabcd");
  CHECK(overlap.safe_cut("xabcdabcdabcd", 11) == 1);
  CHECK(overlap.longest() >= 8);
  CHECK(secret_masker{}.safe_cut("abc", 2) == 2);
}

TEST_CASE("a secret in a JSON string spelt with uXXXX escapes of any character is masked", "[secrets]") {
  arun::io::secret_masker m;
  m.add("ab&cd<ef>ghSECRET");
  // Go's encoding/json writes & < > as \u0026 \u003c \u003e; any character may be spelt so.
  const std::string go = R"({"t": "ab\u0026cd\u003cef\u003eghSECRET", "n": 1})";
  CHECK_FALSE(m.clean(go));
  const auto masked = m.mask(go);
  CHECK(masked == R"({"t": "***", "n": 1})");
  const std::string all = R"(["\u0061\u0062\u0026\u0063\u0064<ef>ghSECRET tail"])";
  CHECK(m.mask(all) == R"(["*** tail"])");
  // Escapes that decode to no secret are left as they were.
  const std::string other = R"({"t": "\u0026 nothing here"})";
  CHECK(m.clean(other));
  CHECK(m.mask(other) == other);
}
