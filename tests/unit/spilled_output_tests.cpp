// Outputs kept out of memory (src/engine/spilled_output.hpp): the reference that stands in
// for a stored output, and every reader — templates, conditions, the shell export — against
// an in-memory output_store that counts what it loads.
#include <catch2/catch.hpp>

#include "condition/condition.hpp"
#include "shell/context_export.hpp"
#include "spilled_output.hpp"
#include "template/render.hpp"

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
    auto name = "/outputs/" + std::string(instance);
    files[name] = std::move(text);
    return name;
  }
  std::optional<std::string> load(std::string_view file, std::string& why) override {
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
  CHECK(ref.at("bytes") == 18);
  CHECK(store.files.at("/outputs/fan[2]") == "a long output line");  // trimmed, as a value would be
  CHECK(keep_output("a long output line", nullptr, "x") == "a long output line");  // no store
  store.refuse = true;
  CHECK(keep_output("a long output line", &store, "x") == "a long output line");  // could not store
  CHECK_FALSE(is_spilled(json::parse(R"({"arun_spilled_output": 1, "bytes": 2, "json": true})")));
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
  CHECK(store.loads.count("/outputs/fan[0]") == 0);  // only what the path enters is loaded
  CHECK(text("{{all}}") == R"(["first long output","second long output","short"])");
  const auto whole = render_value(json::value("{{doc}}"), scope);
  REQUIRE(whole.ok());
  CHECK(whole.value == json::parse(R"({"title": "a stored document", "tags": ["x", "y"]})"));
  CHECK(text("{{doc.missing}}").find("ERROR") == std::string::npos);  // missing: empty, as usual

  // Without a store in the scope the reference is what there is.
  const render_scope plain{context, nullptr, undefined_mode::normal, nullptr, nullptr, nullptr};
  CHECK(render_text("{{all[0].bytes}}", plain).text == "17");

  store.files.erase("/outputs/fan[1]");
  CHECK(text("{{all[1]}}") == "ERROR: {{all[1]}}: the stored output /outputs/fan[1] cannot be read: No such file or directory");
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
  CHECK(store.loads.count("/outputs/f0") == 0);
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
