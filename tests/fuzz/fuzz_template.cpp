// libFuzzer target: template rendering (text and type-preserving) against a fixed context,
// finding text that is not a reference, and splitting a text into lines.
#include "scheduler/foreach_lines.hpp"
#include "template/render.hpp"
#include "template/template_syntax.hpp"

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto context =
      boost::json::parse(R"({"a": "x", "n": 5, "l": [1, [2, {"k": "v"}]], "o": {"p": {"q": null}}, "f": 1.5})").as_object();
  static const arun::engine::name_set declared = {"a", "n", "l", "o", "f", "later"};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto mode : {arun::engine::undefined_mode::normal, arun::engine::undefined_mode::lenient,
                    arun::engine::undefined_mode::strict}) {
    const arun::engine::render_scope scope{context, &declared, mode};
    (void)arun::engine::render_text(text, scope);
    (void)arun::engine::render_value(boost::json::value(boost::json::string(text)), scope);
  }
  (void)arun::engine::find_references(text);
  // Each flaw lies inside the text, in order, and starts with what a diagnostic points at.
  std::size_t after = 0;
  for (const auto& f : arun::engine::find_template_flaws(text)) {
    if (f.begin < after || f.end > size || f.begin + 2 > f.end || text.compare(f.begin, 2, "{{") != 0 ||
        text.substr(f.begin, f.source_text.size()) != f.source_text)
      __builtin_trap();
    after = f.end;
  }
  for (const auto& line : arun::engine::text_lines(text))
    if (line.as_string().empty() || line.as_string().find('\n') != boost::json::string::npos) __builtin_trap();
  return 0;
}
