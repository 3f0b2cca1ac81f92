// The session store (docs/sessions.md, "Where sessions live"): journal records and their round
// trip, which recorded instances a resume keeps, torn lines, the lock, atomic state writes and
// recipe copies.
#include <catch2/catch.hpp>

#include "session/session_record.hpp"
#include "session/session_store.hpp"
#include "temp_dir.hpp"

#include <arun/value_format.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <variant>

using namespace arun;
using namespace arun::io;
using arun::test::temp_dir;
namespace fs = std::filesystem;

namespace {

step_result result(const std::string& id, step_status status, bool fatal = false) {
  step_result r;
  r.step_id = id;
  r.status = status;
  r.fatal = fatal;
  r.attempts = 2;
  r.exit_code = status == step_status::failed ? 3 : 0;
  r.duration = std::chrono::milliseconds(1500);
  r.output = boost::json::value{{"n", 1}};
  return r;
}

std::unique_ptr<session_store> created(const temp_dir& d, const std::string& id) {
  auto s = session_store::create(d.root.string(), id);
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(s));
  return std::move(std::get<std::unique_ptr<session_store>>(s));
}

}  // namespace

TEST_CASE("session store: a journal record reads back as the same instance") {
  auto r = result("fan[3]/x", step_status::failed, true);
  r.iterations = iteration_counts{4, 2, 1, 1};
  r.children.push_back(result("fan[3]/x/c", step_status::completed));
  r.error = "step 'x': exit code 3";
  r.output = boost::json::string("raw \xff bytes");
  r.started_at = std::chrono::system_clock::time_point{} + std::chrono::milliseconds(1'764'000'000'123);
  r.ended_at = r.started_at + std::chrono::milliseconds(1500);
  const auto line = to_compact_json(journal_record(r, {{"out", "v"}}));
  const auto back = parse_journal_line(line);
  REQUIRE(back);
  CHECK(back->result.step_id == "fan[3]/x");
  CHECK(back->result.status == step_status::failed);
  CHECK(back->result.fatal);
  CHECK(back->result.attempts == 2);
  CHECK(back->result.exit_code == 3);
  CHECK(back->result.duration == std::chrono::milliseconds(1500));
  // A resumed run reports when a replayed instance really ran.
  CHECK(back->result.started_at == r.started_at);
  CHECK(back->result.ended_at == r.ended_at);
  CHECK(back->result.output == r.output);  // invalid UTF-8 in an output survives
  CHECK(back->result.error == r.error);
  REQUIRE(back->result.iterations);
  CHECK(back->result.iterations->failed == 1);
  REQUIRE(back->result.children.size() == 1);
  CHECK(back->result.children[0].step_id == "fan[3]/x/c");
  CHECK(back->context_delta.at("out") == "v");
  CHECK_FALSE(parse_journal_line(line.substr(0, line.size() / 2)));  // torn
  CHECK_FALSE(parse_journal_line("[1, 2]"));
}

TEST_CASE("session store: resume keeps finished instances and drops what must run again") {
  temp_dir d("arun-store");
  {
    auto s = created(d, "s1");
    s->record(result("done", step_status::completed), {{"a", 1}});
    s->record(result("skipped", step_status::skipped), {});
    s->record(result("degraded", step_status::degraded), {});
    s->record(result("soft", step_status::failed, false), {});
    s->record(result("fatal", step_status::failed, true), {});
    s->record(result("stopped", step_status::cancelled), {});
    s->record(result("again", step_status::completed), {});
    s->record(result("again", step_status::failed, true), {});  // the later record wins
    s->state()["status"] = "failed";
    CHECK(s->save_state().empty());
    CHECK(s->find("done") == nullptr);  // a fresh run takes nothing from its own journal
  }
  std::ofstream(d.root / "s1" / "recipe.yaml") << "name: x\n";
  std::ofstream(d.root / "s1" / "journal.jsonl", std::ios::app) << "{\"instance\":\"torn\",\"res";
  for (const bool retry_failed : {false, true}) {
    auto opened = session_store::open(d.root.string(), "s1", retry_failed);
    REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(opened));
    auto& s = *std::get<std::unique_ptr<session_store>>(opened);
    REQUIRE(s.find("done"));
    CHECK(s.find("done")->context_delta.at("a") == 1);
    CHECK(s.find("skipped"));
    CHECK(s.find("degraded"));
    CHECK((s.find("soft") != nullptr) == !retry_failed);
    CHECK_FALSE(s.find("fatal"));
    CHECK_FALSE(s.find("stopped"));
    CHECK_FALSE(s.find("again"));
    CHECK_FALSE(s.find("torn"));
    CHECK(s.state().at("status") == "failed");
    // What the journal has a record of, kept or to run again (a Slurm job of an instance
    // that is not recorded is taken up by a resume), with the instances it contains.
    for (const char* id : {"done", "soft", "fatal", "stopped", "again", "fatal/recovery_on_failure", "again/x/y"})
      CHECK(s.recorded(id));
    for (const char* id : {"torn", "never", "", "/", "don", "done2", "x/done"}) CHECK_FALSE(s.recorded(id));
  }
}

TEST_CASE("session store: the lock refuses a second holder and atomic writes replace whole files") {
  temp_dir d("arun-store");
  auto first = created(d, "s2");
  std::ofstream(d.root / "s2" / "recipe.yaml") << "name: x\n";
  CHECK(first->save_state().empty());
  auto second = session_store::open(d.root.string(), "s2", false);
  REQUIRE(std::holds_alternative<std::string>(second));
  CHECK(std::get<std::string>(second).find("is in use by another arun") != std::string::npos);
  first.reset();  // released
  CHECK(std::holds_alternative<std::unique_ptr<session_store>>(session_store::open(d.root.string(), "s2", false)));

  const auto path = (d.root / "file.json").string();
  CHECK(write_file_atomically(path, "one").empty());
  CHECK(write_file_atomically(path, "two").empty());
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  CHECK(text == "two");
  // No temp file is left, and one someone made first is never the one written: the temp
  // names are random and made with O_EXCL (an old arun's PID-named one included).
  const auto planted = path + ".tmp-" + std::to_string(::getpid());
  std::ofstream(planted) << "theirs";
  CHECK(write_file_atomically(path, "three").empty());
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(d.root)) entries += e.path().string().starts_with(path) ? 1 : 0;
  CHECK(entries == 2);  // the file and the planted one
  std::ifstream again(planted);
  std::getline(again, text);
  CHECK(text == "theirs");
  CHECK_FALSE(write_file_atomically((d.root / "missing" / "x").string(), "x").empty());
}

TEST_CASE("session store: recipe copies are kept and replayed") {
  temp_dir d("arun-store");
  const auto recipe_path = (d.root / "r.yaml").string();
  session_sources sources;
  sources.read(recipe_path, "name: before\n");
  CHECK_FALSE(sources.saved(recipe_path));  // a new run reads the disk
  sources.attach((d.root / "sess").string());
  sources.read((d.root / "sub.yaml").string(), "name: sub\n");
  auto loaded = session_sources::load((d.root / "sess").string());
  REQUIRE(std::holds_alternative<std::unique_ptr<session_sources>>(loaded));
  auto& replay = *std::get<std::unique_ptr<session_sources>>(loaded);
  CHECK(replay.saved(recipe_path) == "name: before\n");
  CHECK(replay.saved((d.root / "sub.yaml").string()) == "name: sub\n");
  CHECK_FALSE(replay.saved((d.root / "other.yaml").string()));
}

TEST_CASE("session store: a torn last line is cut off so the next record survives") {
  temp_dir d("arun-store");
  {
    auto s = created(d, "s3");
    s->record(result("a", step_status::completed), {});
    CHECK(s->save_state().empty());
  }
  std::ofstream(d.root / "s3" / "recipe.yaml") << "name: x\n";
  std::ofstream(d.root / "s3" / "journal.jsonl", std::ios::app) << "{\"instance\":\"b\",\"sta";
  {
    auto opened = session_store::open(d.root.string(), "s3", false);
    REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(opened));
    std::get<std::unique_ptr<session_store>>(opened)->record(result("b", step_status::completed), {});
  }
  auto again = session_store::open(d.root.string(), "s3", false);
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(again));
  CHECK(std::get<std::unique_ptr<session_store>>(again)->find("a"));
  CHECK(std::get<std::unique_ptr<session_store>>(again)->find("b"));
}

TEST_CASE("session store: an instance that runs again re-opens the loops and calls around it") {
  temp_dir d("arun-store");
  {
    auto s = created(d, "s4");
    s->record(result("fan[0]/x", step_status::completed), {});
    s->record(result("fan[0]", step_status::completed), {});
    s->record(result("fan[1]/x", step_status::failed, false), {});
    s->record(result("fan[1]", step_status::completed), {});
    s->record(result("fan", step_status::completed), {});
    s->record(result("call/inner[2]", step_status::failed, false), {});
    s->record(result("call", step_status::completed), {});
    CHECK(s->save_state().empty());
  }
  std::ofstream(d.root / "s4" / "recipe.yaml") << "name: x\n";
  auto kept = session_store::open(d.root.string(), "s4", false);
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(kept));
  CHECK(std::get<std::unique_ptr<session_store>>(kept)->find("fan"));  // nothing runs again
  kept = std::string();  // release the lock
  auto retried = session_store::open(d.root.string(), "s4", true);
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(retried));
  auto& s = *std::get<std::unique_ptr<session_store>>(retried);
  CHECK_FALSE(s.find("fan[1]/x"));
  CHECK_FALSE(s.find("fan[1]"));
  CHECK_FALSE(s.find("fan"));
  CHECK(s.find("fan[0]"));
  CHECK(s.find("fan[0]/x"));
  CHECK_FALSE(s.find("call/inner[2]"));
  CHECK_FALSE(s.find("call"));
  CHECK(valid_session_id("20261121-134501-3f9a2c"));
  CHECK_FALSE(valid_session_id("../x"));
  CHECK_FALSE(valid_session_id(""));
}

TEST_CASE("session store: journal lines carry a checksum that tells a damaged line from a whole one") {
  const auto line = journal_line(result("a", step_status::completed), {{"out", "v"}});
  CHECK(line.ends_with("\"}\n"));
  CHECK(line.find(",\"crc\":\"") != std::string::npos);
  const auto text = line.substr(0, line.size() - 1);
  CHECK_FALSE(checksum_mismatch(text));
  REQUIRE(parse_journal_line(text));
  auto flipped = text;
  flipped[flipped.find("\"v\"") + 1] = 'w';  // still valid JSON, a different value
  CHECK(checksum_mismatch(flipped));
  CHECK_FALSE(parse_journal_line(flipped));
  // An older arun's line, without a checksum, reads as before.
  CHECK(parse_journal_line(to_compact_json(journal_record(result("a", step_status::completed), {}))));
}

namespace {

// `calls` agent calls of claude's `model`, 100 input and 10 output tokens each, costing `cost`
// in all (none known: every call of unknown cost).
agent_usage claude_calls(int calls, std::optional<double> cost, std::string model = "m1") {
  agent_usage u;
  u.provider = "claude";
  u.model = std::move(model);
  u.calls = static_cast<std::uint64_t>(calls);
  u.input = 100 * u.calls;
  u.output = 10 * u.calls;
  u.cost_usd = cost;
  u.calls_without_cost = cost ? 0 : u.calls;
  return u;
}

void rewrite(const fs::path& file, const std::function<void(std::string&)>& change) {
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  change(text);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

std::unique_ptr<session_store> three_records(const temp_dir& d, const std::string& id) {
  auto s = created(d, id);
  s->state()["invocation"] = boost::json::object{{"working_dir", "/w"}, {"sets", boost::json::array{"x=1"}}};
  s->state()["recipe_path"] = "/w/r.yaml";
  for (const auto* name : {"a", "b", "c"}) s->record(result(name, step_status::completed), {{name, 1}});
  s->state()["status"] = "failed";
  REQUIRE(s->save_state().empty());
  std::ofstream(d.root / id / "recipe.yaml") << "name: x\n";
  return s;
}

std::unique_ptr<session_store> reopened(const temp_dir& d, const std::string& id) {
  auto opened = session_store::open(d.root.string(), id, false);
  INFO((std::holds_alternative<std::string>(opened) ? std::get<std::string>(opened) : ""));
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(opened));
  return std::move(std::get<std::unique_ptr<session_store>>(opened));
}

}  // namespace

TEST_CASE("session store: resume reports damaged and missing journal records and runs them again") {
  temp_dir d("arun-store");
  three_records(d, "d1").reset();
  rewrite(d.root / "d1" / "journal.jsonl", [](std::string& t) { t[t.find("\"b\":1") + 4] = '2'; });
  {
    auto s = reopened(d, "d1");
    CHECK(s->find("a"));
    CHECK_FALSE(s->find("b"));  // damaged: runs again
    CHECK(s->find("c"));
    REQUIRE(s->notices().size() == 1);
    CHECK_THAT(s->notices()[0], Catch::Contains("1 line of ") && Catch::Contains("is damaged (line 2)"));
  }
  fs::remove(d.root / "d1" / "journal.jsonl");
  auto s = reopened(d, "d1");
  CHECK_FALSE(s->find("a"));
  REQUIRE(s->notices().size() == 1);
  CHECK_THAT(s->notices()[0], Catch::Contains("holds 0 records but the session had written 3") &&
                                  Catch::Contains("the 3 missing finished instances run again"));
}

TEST_CASE("session store: a damaged or missing state.json is rebuilt from origin.json and the journal") {
  temp_dir d("arun-store");
  three_records(d, "d2").reset();
  for (const auto& damage : {std::string("{\"format\":1,\"sta"), std::string()}) {
    if (damage.empty())
      fs::remove(d.root / "d2" / "state.json");
    else
      std::ofstream(d.root / "d2" / "state.json", std::ios::trunc) << damage;
    auto s = reopened(d, "d2");
    CHECK(s->find("a"));
    CHECK(s->find("c"));
    CHECK(s->state().at("status") == "failed");
    CHECK(s->state().at("recipe_path") == "/w/r.yaml");
    CHECK(s->state().at("invocation").at("sets") == boost::json::array{"x=1"});
    REQUIRE_FALSE(s->notices().empty());
    CHECK_THAT(s->notices()[0], Catch::Contains("rebuilt from origin.json and the journal"));
    CHECK(s->save_state().empty());
  }
  // Another format is not damage: still refused.
  std::ofstream(d.root / "d2" / "state.json", std::ios::trunc) << "{\"format\":99}";
  const auto other = session_store::open(d.root.string(), "d2", false);
  REQUIRE(std::holds_alternative<std::string>(other));
  CHECK_THAT(std::get<std::string>(other), Catch::Contains("has state format 99"));
}

TEST_CASE("session store: every agent call's usage is journaled and a resume sums it, whatever became of the instance") {
  temp_dir d("arun-store");
  auto call = [](std::string model, std::optional<double> cost) { return claude_calls(1, cost, std::move(model)); };
  {
    auto s = created(d, "u1");
    s->record_usage("ask[0]", call("m1", 0.01));
    s->record(result("ask[0]", step_status::completed), {});
    s->record_usage("ask[1]", call("m1", 0.02));  // its instance then cancelled: no kept record
    s->record(result("ask[1]", step_status::cancelled), {});
    s->record_usage("ask[2]", call("m2", std::nullopt));  // arun died before its record
    CHECK(s->records() == 2);  // usage lines are not records of instances
    s->state()["records"] = static_cast<std::int64_t>(s->records());
    CHECK(s->save_state().empty());
    CHECK_FALSE(s->recorded_usage());  // a fresh session's earlier runs spent nothing
  }
  std::ofstream(d.root / "u1" / "recipe.yaml") << "name: x\n";
  auto opened = session_store::open(d.root.string(), "u1", false);
  REQUIRE(std::holds_alternative<std::unique_ptr<session_store>>(opened));
  auto& s = *std::get<std::unique_ptr<session_store>>(opened);
  CHECK(s.notices().empty());  // neither damage nor missing records
  CHECK(s.find("ask[0]"));
  CHECK_FALSE(s.find("ask[1]"));
  const auto earlier = s.recorded_usage();
  REQUIRE(earlier);
  REQUIRE(earlier->size() == 2);
  CHECK((*earlier)[0].model == "m1");
  CHECK((*earlier)[0].calls == 2);
  CHECK((*earlier)[0].input == 200);
  CHECK((*earlier)[0].cost_usd == Approx(0.03));
  CHECK((*earlier)[1].model == "m2");
  CHECK((*earlier)[1].calls_without_cost == 1);
  CHECK_FALSE((*earlier)[1].cost_usd);
  // A usage line is no instance's record for the readers of failed instances either.
  CHECK(parse_usage_line(usage_line("x", call("m1", 0.5))));
  CHECK_FALSE(parse_journal_line(usage_line("x", call("m1", 0.5))));
  CHECK_FALSE(parse_usage_line(journal_line(result("x", step_status::completed), {})));
}

TEST_CASE("session store: records with usage and usage lines in one journal count each call once") {
  temp_dir d("arun-store");
  auto used = [](double cost, int calls = 1) { return claude_calls(calls, cost); };
  auto with_usage = [&](const std::string& id, step_status status, agent_usage u) {
    auto r = result(id, status, status == step_status::failed);
    r.usage = std::move(u);
    return r;
  };
  {
    auto s = created(d, "mixed");
    // An arun that wrote usage only into records: two leaves, then their loop's sum.
    s->record(with_usage("ask[0]", step_status::completed, used(0.01)), {});
    s->record(with_usage("ask[1]", step_status::failed, used(0.02)), {});
    s->record(with_usage("ask", step_status::failed, used(0.03, 2)), {});
    // A later arun ran ask[1] again: its call's usage line, then its record (which repeats it).
    s->record_usage("ask[1]", used(0.04));
    s->record(with_usage("ask[1]", step_status::completed, used(0.04)), {});
    s->record_usage("ask[2]", used(0.08));  // killed before its record
    s->state()["records"] = static_cast<std::int64_t>(s->records());
    CHECK(s->save_state().empty());
  }
  std::ofstream(d.root / "mixed" / "recipe.yaml") << "name: x\n";
  auto s = reopened(d, "mixed");
  CHECK(s->notices().empty());
  const auto earlier = s->recorded_usage();
  REQUIRE(earlier);
  REQUIRE(earlier->size() == 1);
  CHECK((*earlier)[0].calls == 4);  // ask[0], ask[1] twice, ask[2]; not the loop's sum
  REQUIRE((*earlier)[0].cost_usd);
  CHECK(*(*earlier)[0].cost_usd == Approx(0.15));
}

TEST_CASE("session store: a damaged usage line is said to lose a call's cost, and no instance runs again for it") {
  temp_dir d("arun-store");
  const auto u = claude_calls(1, 0.25);
  {
    auto s = created(d, "dmg");
    s->record_usage("ask[0]", u);
    s->record(result("ask[0]", step_status::completed), {});
    s->record_usage("ask[1]", u);
    s->record(result("ask[1]", step_status::completed), {});
    s->state()["records"] = static_cast<std::int64_t>(s->records());
    CHECK(s->save_state().empty());
  }
  std::ofstream(d.root / "dmg" / "recipe.yaml") << "name: x\n";
  rewrite(d.root / "dmg" / "journal.jsonl", [](std::string& t) { t[t.find("0.25") + 3] = '7'; });
  auto s = reopened(d, "dmg");
  CHECK(s->find("ask[0]"));
  CHECK(s->find("ask[1]"));
  REQUIRE(s->notices().size() == 1);
  CHECK_THAT(s->notices()[0], Catch::Contains("1 agent call's usage in ") && Catch::Contains("is damaged (line 1)") &&
                                  Catch::Contains("no record of the instance stands for it: what it cost is not counted") &&
                                  !Catch::Contains("run again"));
  const auto earlier = s->recorded_usage();
  REQUIRE(earlier);
  REQUIRE(earlier->size() == 1);
  CHECK((*earlier)[0].calls == 1);  // the readable line only (the records here hold no usage)
}
