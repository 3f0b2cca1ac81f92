// libFuzzer target, issue 33 rule 4 (docs/security.md, "Outputs are data, never references"):
// arbitrary bytes as a step's output never change which files arun reads. The output goes
// through keep_output into the context, then through templates, conditions, the shell export,
// the journal line and its replay, and the result's values; a recording output_store aborts
// when anything loads a file it did not create itself, or loads one at a size it did not store.
#include "condition/condition.hpp"
#include "output/stored_values.hpp"
#include "output_value.hpp"
#include "session/session_record.hpp"
#include "shell/context_export.hpp"
#include "spilled_output.hpp"
#include "template/render.hpp"

#include <arun/stored_output.hpp>
#include <arun/value_format.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <variant>

namespace {

namespace json = boost::json;
using namespace arun;
using namespace arun::engine;

class recording_store final : public output_store {
public:
  std::map<std::string, std::string, std::less<>> created;
  std::size_t spill_threshold() const noexcept override { return 48; }
  std::optional<std::string> store(std::string_view instance, std::string text) override {
    auto name = std::to_string(created.size() + 1) + "-" + std::string(instance.substr(0, 8)) + ".txt";
    created[name] = std::move(text);
    return name;
  }
  std::optional<std::string> load(std::string_view file, std::uint64_t bytes, std::string& why) override {
    const auto it = created.find(file);
    if (it == created.end() || it->second.size() != bytes) std::abort();  // a file the store never made
    why.clear();
    return it->second;
  }
};

void render_all(const json::object& context, output_store& store) {
  const render_scope scope{context, nullptr, undefined_mode::lenient, nullptr, nullptr, &store};
  for (const auto* t : {"{{reply}}", "{{all}}", "{{all[1]}}", "{{printed}}", "{{reply.avatar}}", "{{printed.avatar}}",
                        "{{printed[0]}}", "{{printed.arun_spilled_output}}"})
    (void)render_text(t, scope);
  (void)render_value(json::value("{{printed}}"), scope);
  if (const auto* o = context.at("printed").if_object())
    for (const auto& kv : *o) (void)render_text("{{printed." + std::string(kv.key()) + "}}", scope);
  for (const auto* c : {"'root' in printed", "printed == reply", "len(all) > 1 and 'x' in all[1]", "printed.avatar"}) {
    auto parsed = parse_condition(c);
    if (auto* cond = std::get_if<condition>(&parsed)) (void)evaluate_condition(*cond, scope);
  }
  (void)export_context(context);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view output(reinterpret_cast<const char*>(data), size);
  recording_store store;
  json::object context;
  context["reply"] = keep_output(output, &store, "reply");
  context["all"] = json::array{context["reply"], keep_output(std::string(64, 'x'), &store, "fan")};
  context["printed"] = output_value(output);  // the same bytes, never stored: data
  if (holds_stored_output(context["printed"])) std::abort();
  render_all(context, store);

  // The journal line and its replay: only what the engine stored comes back as a reference.
  step_result r;
  r.step_id = "reply";
  r.status = step_status::completed;
  r.output = context["reply"];
  const auto line = io::journal_line(r, context);
  const auto replayed = io::parse_journal_line(line);
  if (!replayed) std::abort();
  render_all(replayed->context_delta, store);
  (void)io::parse_journal_line(output);  // the bytes as a journal line of their own

  // The result's values: loaded from the store's own files, or stand-ins.
  run_result result;
  result.context = replayed->context_delta;
  result.step_results.push_back(replayed->result);
  io::put_stored_values(result, &store, 100);
  if (holds_stored_output(json::value(result.context))) std::abort();
  return 0;
}
