#include <catch2/catch.hpp>

#include "process/output_capture.hpp"

#include "output/secret_masker.hpp"

#include <string>
#include <vector>

using arun::io::capture_limits;
using arun::io::output_capture;

namespace {

struct recorded_line {
  std::string text;
  bool cut;
  bool operator==(const recorded_line&) const = default;
};

}  // namespace

TEST_CASE("lines are split across chunk boundaries and the partial last line comes at finish") {
  std::vector<recorded_line> lines;
  output_capture c({}, [&](std::string_view l, bool cut) { lines.push_back({std::string(l), cut}); });
  c.append("one\ntw");
  c.append("o\n\nthr");
  CHECK(lines == std::vector<recorded_line>{{"one", false}, {"two", false}, {"", false}});
  c.finish();
  CHECK(lines.back() == recorded_line{"thr", false});
  CHECK(c.take().text == "one\ntwo\n\nthr");
}

TEST_CASE("an over-long line is delivered cut once and the rest of it is dropped") {
  capture_limits limits;
  limits.max_line_bytes = 4;
  std::vector<recorded_line> lines;
  output_capture c(limits, [&](std::string_view l, bool cut) { lines.push_back({std::string(l), cut}); });
  c.append("abcdefgh");
  c.append("ijk\nok\n");
  c.append("123456");
  c.finish();
  CHECK(lines == std::vector<recorded_line>{{"abcd", true}, {"ok", false}, {"1234", true}});
}

TEST_CASE("the stored text stops at max_bytes and says it was truncated") {
  capture_limits limits;
  limits.max_bytes = 10;
  output_capture c(limits);
  c.append("12345");
  c.append("67890abc");
  c.append("def");
  const auto out = c.take();
  CHECK(out.text == "1234567890");
  CHECK(out.truncated);
  CHECK(out.total_bytes == 16);
}

TEST_CASE("exactly max_bytes is not truncated") {
  capture_limits limits;
  limits.max_bytes = 4;
  output_capture c(limits);
  c.append("1234");
  const auto out = c.take();
  CHECK(out.text == "1234");
  CHECK_FALSE(out.truncated);
}

TEST_CASE("the tail keeps the last 20 lines") {
  output_capture c;
  for (int i = 1; i <= 30; ++i) c.append("line " + std::to_string(i) + "\n");
  const auto tail = c.take().tail;
  CHECK(tail.rfind("line 11\n", 0) == 0);
  CHECK(tail.size() == 20 * 8);  // "line 11\n" .. "line 30\n"
  CHECK(tail.substr(tail.size() - 8) == "line 30\n");
}

TEST_CASE("the tail keeps at most 8 KiB, even of one huge chunk") {
  output_capture c;
  c.append(std::string(100000, 'a') + "end");
  const auto tail = c.take().tail;
  CHECK(tail.size() == 8 * 1024);
  CHECK(tail.substr(tail.size() - 3) == "end");
}

TEST_CASE("last_lines counts lines from the end, ignoring one trailing newline") {
  using arun::io::last_lines;
  CHECK(last_lines("a\nb\nc\n", 2) == "b\nc\n");
  CHECK(last_lines("a\nb\nc", 2) == "b\nc");
  CHECK(last_lines("a\nb", 5) == "a\nb");
  CHECK(last_lines("abc", 0).empty());
}

// docs/watching.md#secrets: a cut never keeps part of a secret, wherever the read chunks end.
TEST_CASE("no cut keeps the beginning or the end of a secret that straddles it", "[secrets]") {
  arun::io::secret_masker secrets;
  const std::string secret = "S3CRET-0123456789";
  secrets.add(secret);
  capture_limits limits;
  limits.secrets = &secrets;
  limits.max_bytes = 40;
  limits.max_line_bytes = 30;
  limits.tail_bytes = 12;
  const std::string before(25, 'a');  // the secret starts 5 bytes before the line cut
  const std::string text = before + secret + std::string(30, 'z') + "\n" + std::string(10, 'b') + secret + "yy\n";
  // Every split into two chunks: the straddle is seen whatever the pipe's reads were.
  for (std::size_t split = 0; split <= text.size(); split += 7) {
    std::vector<recorded_line> lines;
    output_capture c(limits, [&](std::string_view l, bool cut) { lines.push_back({std::string(l), cut}); });
    c.append(std::string_view(text).substr(0, split));
    c.append(std::string_view(text).substr(split));
    c.finish();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == recorded_line{before, true});
    CHECK(lines[1] == recorded_line{std::string(10, 'b') + secret + "yy", false});
    const auto kept = c.take();
    CHECK(kept.truncated);
    CHECK(kept.text == before);  // 40 bytes would end inside the secret
    CHECK(kept.tail == "yy\n");  // the last 12 bytes begin inside the second one
  }
}
