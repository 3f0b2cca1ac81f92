// libFuzzer target: the condition language (docs/reference/conditions.md): parse, then evaluate in
// every mode.
#include "condition/condition.hpp"

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto context =
      boost::json::parse(R"({"s": "in progress", "n": 3, "l": [1, "2", {"k": true}], "o": {"status": "ok"}, "e": ""})")
          .as_object();
  static const arun::engine::name_set declared = {"s", "n", "l", "o", "e", "later"};
  auto parsed = arun::engine::parse_condition(std::string_view(reinterpret_cast<const char*>(data), size));
  if (const auto* c = std::get_if<arun::engine::condition>(&parsed)) {
    for (auto mode : {arun::engine::undefined_mode::normal, arun::engine::undefined_mode::lenient,
                      arun::engine::undefined_mode::strict})
      (void)arun::engine::evaluate_condition(*c, {context, &declared, mode});
  }
  return 0;
}
