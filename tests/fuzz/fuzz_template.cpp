// libFuzzer target: template rendering (text and type-preserving) against a fixed context.
#include "template/render.hpp"

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
  return 0;
}
