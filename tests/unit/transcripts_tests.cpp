// The session's agent transcripts (session/transcripts.hpp): one JSON line per call, masked
// and bounded, read back in call order and shown as text.
#include <catch2/catch.hpp>

#include "session/transcripts.hpp"
#include "temp_dir.hpp"

#include <memory>

using namespace arun;
using arun::test::temp_dir;

namespace {

io::agent_call_record call(std::string instance, std::string prompt, std::string reply) {
  io::agent_call_record c;
  c.instance = std::move(instance);
  c.argv = {"claude", "-p", "--output-format", "json", "--append-system-prompt", "be careful"};
  c.model = "m1";
  c.system_prompt = "be careful";
  c.prompt = std::move(prompt);
  c.reply = std::move(reply);
  c.exit_code = 0;
  auto& u = c.usage.emplace();
  u.provider = "claude";
  u.model = "m1";
  u.calls = 1;
  u.input = 1200;
  u.output = 30;
  u.cost_usd = 0.0042;
  return c;
}

}  // namespace

TEST_CASE("transcripts: calls are kept in order masked and cut at the bound then shown as text") {
  temp_dir dir{"arun-transcripts"};
  io::secret_masker masker;
  masker.add("hunter2");
  {
    auto writer = std::make_shared<io::background_writer>();
    io::transcript_store store(io::transcripts_file(dir.root.string()), 2048, writer, &masker);
    store.record(call("fan[1]/ask", "first prompt with hunter2", "first reply"));
    store.record(call("other", "p", "r"));
    store.record(call("fan[1]/ask", "second prompt", std::string(5000, 'x')));
    writer->drain();
    CHECK(store.error().empty());
  }
  std::string why;
  auto all = io::read_transcripts(dir.root.string(), why);
  CHECK(why.empty());
  // One file for the session: the instances in the order each first called.
  REQUIRE(all.size() == 2);
  CHECK(all[1].instance == "other");
  const auto& fan = all[0];
  CHECK(fan.instance == "fan[1]/ask");
  REQUIRE(fan.calls.size() == 2);
  CHECK(fan.calls[0].prompt == "first prompt with ***");
  CHECK(fan.calls[0].reply == "first reply");
  CHECK(fan.calls[1].cut);
  CHECK(fan.calls[1].reply.size() < 2200);
  CHECK(fan.calls[1].reply.find("more bytes: cut at --max-output") != std::string::npos);
  REQUIRE(fan.calls[0].usage);
  CHECK(fan.calls[0].usage->input == 1200);
  const auto text = io::transcript_to_text(fan);
  CHECK(text.find("== fan[1]/ask · call 1 of 2") != std::string::npos);
  CHECK(text.find("$ claude -p --output-format json --append-system-prompt 'be careful'") != std::string::npos);
  CHECK(text.find("### system prompt\nbe careful\n") != std::string::npos);
  CHECK(text.find("### prompt\nfirst prompt with ***\n") != std::string::npos);
  CHECK(text.find("usage: claude m1: 1,200 in, 30 out, 0 cache read, 0 cache write, $0.0042") != std::string::npos);
  CHECK(text.find("hunter2") == std::string::npos);
}

TEST_CASE("transcripts: a session without any has none and a torn line is skipped") {
  temp_dir dir{"arun-transcripts"};
  std::string why;
  CHECK(io::read_transcripts(dir.root.string(), why).empty());
  CHECK(why.empty());
  dir.write("transcripts.jsonl", "{\"instance\":\"a\",\"prompt\":\"p\",\"reply\":\"r\"}\n{\"instance\":\"a\",\"pro");
  const auto all = io::read_transcripts(dir.root.string(), why);
  REQUIRE(all.size() == 1);
  CHECK(all[0].calls.size() == 1);
}

TEST_CASE("transcripts: a second store on the same session appends as a resume does") {
  temp_dir dir{"arun-transcripts"};
  for (const char* prompt : {"before", "after"}) {
    auto writer = std::make_shared<io::background_writer>();
    io::transcript_store store(io::transcripts_file(dir.root.string()), 4096, writer, nullptr);
    store.record(call("ask", prompt, "r"));
    writer->drain();
  }
  std::string why;
  const auto all = io::read_transcripts(dir.root.string(), why);
  REQUIRE(all.size() == 1);
  REQUIRE(all[0].calls.size() == 2);
  CHECK(all[0].calls[0].prompt == "before");
  CHECK(all[0].calls[1].prompt == "after");
}

TEST_CASE("transcripts: a file that cannot be written is reported not thrown") {
  temp_dir dir{"arun-transcripts"};
  auto writer = std::make_shared<io::background_writer>();
  io::transcript_store store(dir.root.string() + "/missing/transcripts.jsonl", 4096, writer, nullptr);
  store.record(call("ask", "p", "r"));
  writer->drain();
  CHECK(store.error().find("cannot write transcript") != std::string::npos);
}
