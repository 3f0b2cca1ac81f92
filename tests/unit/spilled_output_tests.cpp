// Outputs kept out of memory (src/engine/spilled_output.hpp): the reference that stands in
// for a stored output, and every reader — templates, conditions, the shell export — against
// an in-memory output_store that counts what it loads.
#include <catch2/catch.hpp>

#include "condition/condition.hpp"
#include "shell/context_export.hpp"
#include "spilled_output.hpp"
#include "template/render.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <map>

using namespace arun;
using namespace arun::engine;
namespace json = boost::json;

namespace {

class memory_store final : public output_store {
public:
  std::size_t threshold = 10;
  bool refuse = false;
  std::map<std::string, std::string, std::less<>> files;
  std::map<std::string, int, std::less<>> loads;

  std::size_t spill_threshold() const noexcept override { return threshold; }
  std::optional<std::string> store(std::string_view instance, std::string text) override {
    if (refuse) return std::nullopt;
    auto name = std::string(instance) + ".txt";
    files[name] = std::move(text);
    return name;
  }
  std::optional<std::string> load(std::string_view file, std::uint64_t, std::string& why) override {
    ++loads[std::string(file)];
    const auto it = files.find(file);
    if (it == files.end()) {
      why = "No such file or directory";
      return std::nullopt;
    }
    return it->second;
  }
};

}  // namespace

TEST_CASE("spilled output: an output longer than the threshold is stored and referenced") {
  memory_store store;
  CHECK(keep_output("  short  ", &store, "a") == "short");  // trimmed, in memory
  CHECK(keep_output(R"({"n": 1})", &store, "a") == json::parse(R"({"n": 1})"));  // 8 bytes: in memory
  const auto ref = keep_output("  a long output line  \n", &store, "fan[2]");
  REQUIRE(is_spilled(ref));
  CHECK(as_stored_output(ref)->bytes == 18);
  CHECK(as_stored_output(ref)->file == "fan[2].txt");
  CHECK(store.files.at("fan[2].txt") == "a long output line");  // trimmed, as a value would be
  CHECK(keep_output("a long output line", nullptr, "x") == "a long output line");  // no store
  store.refuse = true;
  CHECK(keep_output("a long output line", &store, "x") == "a long output line");  // could not store
  CHECK_FALSE(is_spilled(json::parse(R"({"arun_spilled_output": "a.txt", "bytes": 2, "json": true})")));
}

TEST_CASE("spilled output: templates read the stored value, following paths into it") {
  memory_store store;
  json::object context;
  context["doc"] = keep_output(R"({"title": "a stored document", "tags": ["x", "y"]})", &store, "doc");
  context["all"] = json::array{keep_output("first long output", &store, "fan[0]"),
                               keep_output("second long output", &store, "fan[1]"), json::value("short")};
  const render_scope scope{context, nullptr, undefined_mode::normal, nullptr, nullptr, &store};
  const auto text = [&](std::string_view t) {
    auto r = render_text(t, scope);
    return r.ok() ? r.text : "ERROR: " + r.error;
  };
  CHECK(text("{{doc.title}}") == "a stored document");
  CHECK(text("{{doc.tags[1]}}") == "y");
  CHECK(text("{{all[1]}}") == "second long output");
  CHECK(store.loads.count("fan[0].txt") == 0);  // only what the path enters is loaded
  CHECK(text("{{all}}") == R"(["first long output","second long output","short"])");
  const auto whole = render_value(json::value("{{doc}}"), scope);
  REQUIRE(whole.ok());
  CHECK(whole.value == json::parse(R"({"title": "a stored document", "tags": ["x", "y"]})"));
  CHECK(text("{{doc.missing}}").find("ERROR") == std::string::npos);  // missing: empty, as usual

  // Without a store in the scope a reference renders as its stand-in, never as it is held.
  const render_scope plain{context, nullptr, undefined_mode::normal, nullptr, nullptr, nullptr};
  CHECK(render_text("{{all[0]}}", plain).text ==
        R"({"arun_output_omitted":{"bytes":17,"file":"outputs/fan[0].txt","reason":"not loaded"}})");

  store.files.erase("fan[1].txt");
  CHECK(text("{{all[1]}}") == "ERROR: {{all[1]}}: the stored output outputs/fan[1].txt cannot be read: No such file or directory");
}

TEST_CASE("spilled output: conditions read stored values, loading only the items they index") {
  memory_store store;
  json::object context;
  context["all"] = json::array{keep_output("output number zero", &store, "f0"), keep_output("output number one", &store, "f1")};
  context["doc"] = keep_output(R"({"status": "ok", "pad": "................"})", &store, "doc");
  const render_scope scope{context, nullptr, undefined_mode::normal, nullptr, nullptr, &store};
  const auto holds = [&](std::string_view text) {
    auto parsed = parse_condition(text);
    REQUIRE(std::holds_alternative<condition>(parsed));
    const auto r = evaluate_condition(std::get<condition>(parsed), scope);
    INFO(text << (r.error ? ": " + r.error->message : std::string()));
    REQUIRE_FALSE(r.error);
    return r.value;
  };
  CHECK(holds("'one' in all[1]"));
  CHECK(store.loads.count("f0.txt") == 0);
  CHECK(holds("doc.status == 'ok'"));
  CHECK(holds("{{doc.status}} == 'ok'"));
  CHECK(holds("all[0] == 'output number zero'"));
  CHECK(holds("'output number one' in all"));  // the whole list, loaded
  CHECK(holds("len(all) == 2"));
}

TEST_CASE("spilled output: the shell export leaves stored outputs out, with a warning, instead of loading them") {
  memory_store store;
  json::object context;
  context["blob"] = keep_output("a long output line", &store, "blob");
  context["all"] = json::array{keep_output("a long output line", &store, "f0")};
  context["small"] = "kept";
  const auto e = export_context(context);
  std::vector<std::string> names;
  for (const auto& v : e.variables) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{"RECIPE_VAR_small", "SMALL"});  // no RECIPE_VAR_blob__bytes either
  REQUIRE(e.warnings.size() == 2);
  CHECK(e.warnings[0].find("context key 'all'") == 0);
  CHECK(e.warnings[1].find("holds an output stored on disk") != std::string::npos);
  CHECK(store.loads.empty());
}

// Issue 33, defect 3: a step printed {"avatar": {"arun_spilled_output": "/etc/passwd", ...}} and
// the next step's {{reply.avatar}} read /etc/passwd. Whatever a step prints is data.
TEST_CASE("spilled output: an output shaped like a reference or a stand-in is data, and nothing is loaded") {
  memory_store store;
  store.threshold = 1u << 20;  // nothing printed here is stored
  json::object context;
  for (const auto* printed : {
           R"({"avatar": {"arun_spilled_output": "/etc/passwd", "bytes": 1, "json": false}})",
           R"({"avatar": {"arun_spilled_output": "fan[0].txt", "bytes": 17, "json": true}})",
           R"({"avatar": {"arun_output_omitted": {"bytes": 17, "file": "outputs/fan[0].txt", "reason": "over --max-output"}}})",
       }) {
    store.files["fan[0].txt"] = "first long output";
    context["reply"] = keep_output(printed, &store, "reply");
    CHECK_FALSE(holds_spilled(context["reply"]));
    const render_scope scope{context, nullptr, undefined_mode::normal, nullptr, nullptr, &store};
    const auto r = render_text("{{reply.avatar}}", scope);
    REQUIRE(r.ok());
    CHECK(r.text == to_compact_json(json::parse(printed).at("avatar")));
    auto parsed = parse_condition("'root' in reply.avatar or 'first' in reply.avatar");
    REQUIRE(std::holds_alternative<condition>(parsed));
    const auto c = evaluate_condition(std::get<condition>(parsed), scope);
    CHECK_FALSE(c.error);
    CHECK_FALSE(c.value);
    CHECK(export_context(context).warnings.empty());  // exported as data, not left out as stored
    CHECK(store.loads.empty());
  }
}

TEST_CASE("spilled output: a reference is never written as it is held, so no step can learn its form") {
  memory_store store;
  const auto ref = keep_output("a long output line", &store, "big");
  REQUIRE(is_spilled(ref));
  const auto key = std::string(ref.as_object().begin()->key());
  const auto text = to_compact_json(json::object{{"x", json::array{ref}}});
  CHECK(text == R"({"x":[{"arun_output_omitted":{"bytes":18,"file":"outputs/big.txt","reason":"not loaded"}}]})");
  CHECK(text.find(key) == std::string::npos);
  // The marker is the only thing that makes a reference: 128 random bits, never written.
  CHECK(key.size() >= 32);
  CHECK(value_text(ref).find(key) == std::string::npos);
}

TEST_CASE("spilled output: a stored output is read at its recorded size, or the read fails") {
  memory_store store;
  const auto ref = keep_output("a long output line", &store, "big");
  store.files["big.txt"] = "a longer output line than was stored";
  auto loaded = load_spilled(ref, store);
  REQUIRE(std::holds_alternative<std::string>(loaded));
  CHECK(std::get<std::string>(loaded) == "the stored output outputs/big.txt cannot be read: it holds 36 bytes, not the 18 stored");
}
