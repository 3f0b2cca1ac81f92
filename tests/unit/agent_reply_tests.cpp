// Decoding agent CLIs' machine-readable output: claude's `--output-format json` result
// object and `codex exec --json` events, into the reply text, usage and reported failures.
#include <catch2/catch.hpp>

#include "agents/agent_reply.hpp"

#include <string>
#include <vector>

using namespace arun::io;

namespace {

reply_context asked(std::string model = "", std::string cli = "claude", bool cut = false) {
  reply_context c;
  c.cli = std::move(cli);
  c.model = std::move(model);
  c.cut = cut;
  return c;
}

const std::string claude_success =
    R"({"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"num_turns":1,)"
    R"("result":"Done.\nSTATUS: COMPLETE","session_id":"s1","total_cost_usd":0.0123,)"
    R"("usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":40},)"
    R"("modelUsage":{"claude-haiku-4-5":{"inputTokens":5,"outputTokens":7,"costUSD":0.001},)"
    R"("claude-sonnet-4-5":{"inputTokens":5,"outputTokens":33,"cacheReadInputTokens":3000,"costUSD":0.0113}}})";

const std::string claude_rate_limited =
    R"({"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":5,"num_turns":1,)"
    R"("result":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}","session_id":"s2",)"
    R"("total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,)"
    R"("output_tokens":0},"modelUsage":{}})";

std::string codex_turn(std::string_view message, int input, int cached, int output) {
  return std::string(R"({"type":"turn.started"})") + "\n" +
         R"({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Thinking**"}})" + "\n" +
         R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":")" + std::string(message) +
         "\"}}\n" + R"({"type":"turn.completed","usage":{"input_tokens":)" + std::to_string(input) +
         R"(,"cached_input_tokens":)" + std::to_string(cached) + R"(,"output_tokens":)" + std::to_string(output) + "}}\n";
}

const std::string codex_thread = R"({"type":"thread.started","thread_id":"t1"})" "\n";

std::vector<std::string> texts(const std::vector<shown_line>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) out.push_back(l.text);
  return out;
}

}  // namespace

TEST_CASE("claude json: the result is the reply and its usage is read with the main model") {
  const auto r = decode_claude_json(claude_success + "\n", asked("claude-sonnet-4-5"));
  CHECK(r.text == "Done.\nSTATUS: COMPLETE");
  CHECK_FALSE(r.failed);
  CHECK_FALSE(r.rate_limited);
  CHECK(r.warning.empty());
  CHECK_FALSE(r.raw);
  REQUIRE(r.usage);
  CHECK(r.usage->provider.empty());
  CHECK(r.usage->model == "claude-sonnet-4-5");
  CHECK(r.usage->input == 10);
  CHECK(r.usage->output == 40);
  CHECK(r.usage->cache_read == 3000);
  CHECK(r.usage->cache_write == 200);
  REQUIRE(r.usage->cost_usd);
  CHECK(*r.usage->cost_usd == Approx(0.0123));
}

TEST_CASE("claude json: the model is the one with the most output tokens and ties go to the first") {
  const std::string tie =
      R"({"type":"result","is_error":false,"result":"x","usage":{"input_tokens":1,"output_tokens":2},)"
      R"("modelUsage":{"m-a":{"outputTokens":5},"m-b":{"outputTokens":5},"m-c":{"outputTokens":1}}})";
  CHECK(decode_claude_json(tie, asked("asked")).usage->model == "m-a");
  const std::string later =
      R"({"type":"result","is_error":false,"result":"x","usage":{"input_tokens":1,"output_tokens":2},)"
      R"("modelUsage":{"m-a":{"outputTokens":1},"m-b":{"outputTokens":9}}})";
  CHECK(decode_claude_json(later, asked("asked")).usage->model == "m-b");
}

TEST_CASE("claude json: without modelUsage the model is the one asked for and a missing cost stays unknown") {
  const std::string bare = R"({"type":"result","is_error":false,"result":"ok","usage":{"input_tokens":3,"output_tokens":4}})";
  auto r = decode_claude_json(bare, asked("claude-opus-4-1"));
  REQUIRE(r.usage);
  CHECK(r.usage->model == "claude-opus-4-1");
  CHECK_FALSE(r.usage->cost_usd);  // never a made-up zero
  CHECK(r.usage->tokens() == 7);
  CHECK(decode_claude_json(bare, asked("")).usage->model.empty());
  CHECK_FALSE(decode_claude_json(R"({"type":"result","is_error":false,"result":"ok"})", asked()).usage);
}

TEST_CASE("claude json: is_error is a reported failure with the result as its message") {
  const std::string failed =
      R"({"type":"result","subtype":"error_during_execution","is_error":true,"result":"tool crashed",)"
      R"("usage":{"input_tokens":8,"output_tokens":1},"total_cost_usd":0.5})";
  const auto r = decode_claude_json(failed, asked());
  CHECK(r.failed);
  CHECK(r.error == "tool crashed");
  CHECK_FALSE(r.rate_limited);
  REQUIRE(r.usage);  // spent also when it failed
  CHECK(r.usage->input == 8);
  const auto no_text = decode_claude_json(R"({"type":"result","subtype":"error_max_turns","is_error":true})", asked());
  CHECK(no_text.failed);
  CHECK(no_text.error == "error_max_turns");
}

TEST_CASE("claude json: a 429 that exits 0 is a rate-limited reported failure") {
  const auto r = decode_claude_json(claude_rate_limited, asked("m"));
  CHECK(r.failed);
  CHECK(r.rate_limited);
  CHECK(r.error.starts_with("API Error: 429"));
  REQUIRE(r.usage);
  CHECK(r.usage->tokens() == 0);
  CHECK(r.usage->model == "m");
  // Without api_error_status, the message's rate_limit_error says it.
  auto text_only = claude_rate_limited;
  text_only.replace(text_only.find(R"("api_error_status":429,)"), 23, "");
  CHECK(decode_claude_json(text_only, asked()).rate_limited);
}

TEST_CASE("claude json: banner lines are skipped and the last result line is taken") {
  const std::string out = "Welcome to claude\n" +
                          std::string(R"({"type":"result","is_error":false,"result":"first"})") + "\n" +
                          "note: something\n" + claude_success + "\ntrailing words\n";
  const auto r = decode_claude_json(out, asked());
  CHECK(r.text == "Done.\nSTATUS: COMPLETE");
  CHECK(r.warning.empty());
  // --verbose prints an array of messages, the result last
  const auto verbose = decode_claude_json("[{\"type\":\"system\"},\n" + claude_success + "\n]", asked());
  CHECK(verbose.text == "Done.\nSTATUS: COMPLETE");
  CHECK(verbose.usage);
}

TEST_CASE("claude json: output cut at the capture limit is taken as text with a warning") {
  const auto cut = claude_success.substr(0, 80);
  const auto r = decode_claude_json(cut, asked("", "claude", true));
  CHECK(r.raw);
  CHECK(r.text == cut);
  CHECK_FALSE(r.usage);
  CHECK_FALSE(r.failed);
  CHECK(r.warning ==
        "claude's JSON output could not be read (it was cut at the capture limit; raise --max-output): the reply is "
        "taken as text and its usage is unknown");
  const auto plain = decode_claude_json("just some words\n", asked("", "amplihack:claude"));
  CHECK(plain.text == "just some words\n");
  CHECK(plain.warning == "amplihack:claude's JSON output could not be read (no line of it is a JSON object of "
                         "\"type\":\"result\"): the reply is taken as text and its usage is unknown");
  CHECK(decode_claude_json("", asked()).warning.find("(the output is empty)") != std::string::npos);
}

TEST_CASE("codex jsonl: the last agent message is the reply and cached tokens leave the input count") {
  const auto r = decode_codex_jsonl(codex_thread + codex_turn("the answer", 1000, 600, 50), asked("gpt-5", "codex"));
  CHECK(r.text == "the answer");
  CHECK(r.warning.empty());
  CHECK_FALSE(r.failed);
  REQUIRE(r.usage);
  CHECK(r.usage->input == 400);
  CHECK(r.usage->cache_read == 600);
  CHECK(r.usage->cache_write == 0);
  CHECK(r.usage->output == 50);
  CHECK(r.usage->model == "gpt-5");
  CHECK_FALSE(r.usage->cost_usd);  // codex reports none
  CHECK(decode_codex_jsonl(codex_thread + codex_turn("x", 1, 0, 1), asked("", "codex")).usage->model.empty());
}

TEST_CASE("codex jsonl: usage sums over turns and the reply is the last turn's message") {
  const auto out = codex_thread + codex_turn("first", 100, 0, 10) + codex_turn("second\\nline two", 300, 200, 20);
  const auto r = decode_codex_jsonl(out, asked("", "codex"));
  CHECK(r.text == "second\nline two");
  REQUIRE(r.usage);
  CHECK(r.usage->input == 200);
  CHECK(r.usage->cache_read == 200);
  CHECK(r.usage->output == 30);
}

TEST_CASE("codex jsonl: a failed turn is a reported failure and a 429 reads as a rate limit") {
  const std::string out = codex_thread + R"({"type":"turn.started"})" "\n"
                          R"({"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"})" "\n"
                          R"({"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}})" "\n";
  const auto r = decode_codex_jsonl(out, asked("", "codex"));
  CHECK(r.failed);
  CHECK(r.rate_limited);
  CHECK(r.error == "exceeded retry limit, last status: 429 Too Many Requests");  // said twice, kept once
  CHECK_FALSE(r.usage);
  CHECK(r.text.empty());
  const std::string other = codex_thread + R"({"type":"turn.failed","error":{"message":"sandbox denied"}})" "\n";
  const auto f = decode_codex_jsonl(other, asked("", "codex"));
  CHECK(f.failed);
  CHECK_FALSE(f.rate_limited);
  CHECK(f.error == "sandbox denied");
}

TEST_CASE("codex jsonl: an error it recovered from does not fail the call") {
  const std::string out = codex_thread + R"({"type":"error","message":"Reconnecting... 1/5"})" "\n" +
                          codex_turn("fine", 10, 0, 2);
  const auto r = decode_codex_jsonl(out, asked("", "codex"));
  CHECK_FALSE(r.failed);
  CHECK(r.error == "Reconnecting... 1/5");
  CHECK(r.text == "fine");
  CHECK(r.usage);
}

TEST_CASE("codex jsonl: banner lines and unknown events are skipped") {
  const std::string out = "codex v0.50 starting\n\n" + codex_thread + "{not json at all\n" +
                          R"({"type":"item.started","item":{"type":"command_execution"}})" "\n" +
                          codex_turn("reply", 5, 0, 1) + "bye\n";
  const auto r = decode_codex_jsonl(out, asked("", "codex"));
  CHECK(r.text == "reply");
  CHECK(r.warning.empty());
  CHECK(r.usage);
}

TEST_CASE("codex jsonl: output that is not events, or cut before any message, is taken as text") {
  const auto plain = decode_codex_jsonl("the reply as text\n", asked("", "codex"));
  CHECK(plain.raw);
  CHECK(plain.text == "the reply as text\n");
  CHECK_FALSE(plain.usage);
  CHECK(plain.warning == "codex's JSON events could not be read (no line of it is a JSON event): the reply is taken "
                         "as text and its usage is unknown");
  const auto early = (codex_thread + codex_turn("r", 1, 0, 1)).substr(0, 60);
  const auto cut = decode_codex_jsonl(early, asked("", "codex", true));
  CHECK(cut.raw);
  CHECK(cut.warning.find("(it was cut at the capture limit; raise --max-output)") != std::string::npos);
}

TEST_CASE("codex jsonl: cut after a message keeps the message and leaves the usage unknown") {
  const auto full = codex_thread + codex_turn("kept", 1, 0, 1) + codex_turn("also kept", 1, 0, 1);
  const auto out = full.substr(0, full.size() - 30);
  const auto r = decode_codex_jsonl(out, asked("", "codex", true));
  CHECK_FALSE(r.raw);
  CHECK(r.text == "also kept");
  CHECK_FALSE(r.usage);  // a partial sum would read as the whole
  CHECK(r.warning == "codex's JSON events were cut at the capture limit (raise --max-output): the reply is the last "
                     "agent message before the cut and its usage is unknown");
}

TEST_CASE("agent reply: text CLIs keep their output as the reply") {
  const auto r = decode_reply(reply_format::text, "hello\n", asked());
  CHECK(r.text == "hello\n");
  CHECK_FALSE(r.usage);
  CHECK(r.warning.empty());
  CHECK(decode_reply(reply_format::claude_json, claude_success, asked()).text == "Done.\nSTATUS: COMPLETE");
}

TEST_CASE("agent reply: rate-limit messages are recognised") {
  CHECK(reads_as_rate_limit("429 Too Many Requests"));
  CHECK(reads_as_rate_limit("status: 429"));
  CHECK(reads_as_rate_limit("HTTP 429: slow down"));
  CHECK(reads_as_rate_limit("Rate limit reached"));
  CHECK(reads_as_rate_limit("{\"type\":\"rate_limit_error\"}"));
  CHECK(reads_as_rate_limit("too many requests"));
  CHECK_FALSE(reads_as_rate_limit("sandbox denied"));
  CHECK_FALSE(reads_as_rate_limit("read 14290 bytes"));
  CHECK_FALSE(reads_as_rate_limit(""));
}

TEST_CASE("reply line filter: codex shows messages and errors as they arrive and swallows other events") {
  reply_line_filter f(reply_format::codex_jsonl);
  CHECK(f.on_stdout_line(R"({"type":"thread.started","thread_id":"t"})", false).empty());
  CHECK(f.on_stdout_line(R"({"type":"item.completed","item":{"type":"reasoning","text":"hm"}})", false).empty());
  CHECK(texts(f.on_stdout_line(R"({"type":"item.completed","item":{"type":"agent_message","text":"a\nb"}})", false)) ==
        std::vector<std::string>{"a", "b"});
  CHECK(texts(f.on_stdout_line("a banner", false)) == std::vector<std::string>{"a banner"});
  const auto err = f.on_stdout_line(R"({"type":"error","message":"429 Too Many Requests"})", false);
  REQUIRE(err.size() == 1);
  CHECK(err[0].stream == arun::output_stream::err);
  CHECK(f.on_stdout_line(R"({"type":"turn.failed","error":{"message":"429 Too Many Requests"}})", false).empty());
  CHECK_FALSE(f.show_reply_at_end());
  CHECK(f.on_stdout_line(R"({"type":"item.completed","item":{"type":"agent_message","text":"xxxx)", true).empty());
  CHECK(f.show_reply_at_end());  // that message could not be read here
}

TEST_CASE("reply line filter: claude's output is shown only once decoded") {
  reply_line_filter f(reply_format::claude_json);
  CHECK(f.on_stdout_line(claude_success, false).empty());
  CHECK(f.on_stdout_line("banner", false).empty());
  CHECK(f.show_reply_at_end());
  reply_line_filter text(reply_format::text);
  CHECK(texts(text.on_stdout_line("as is", false)) == std::vector<std::string>{"as is"});
  CHECK_FALSE(text.show_reply_at_end());
}

TEST_CASE("split_lines does not start a line after the final newline") {
  CHECK(split_lines("a\n\nb\n").size() == 3);
  CHECK(split_lines("a").size() == 1);
  CHECK(split_lines("").empty());
}
