// libFuzzer target: the shell lexer and rewriter (docs/reference/templates.md,
// "Templates in bash commands") plus the context export (docs/reference/templates.md,
// "The context in the environment").
#include "shell/context_export.hpp"
#include "shell/shell_render.hpp"

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto context =
      boost::json::parse(R"({"x": "a'b\"c$(id)`id`", "n": 42, "f": 1.5, "l": [1, 2], "o": {"k": "EOF"}, "e": ""})")
          .as_object();
  static const arun::engine::name_set declared = {"x", "n", "f", "l", "o", "e", "later"};
  for (auto mode : {arun::engine::undefined_mode::normal, arun::engine::undefined_mode::lenient}) {
    const auto rendered = arun::engine::render_shell(std::string_view(reinterpret_cast<const char*>(data), size),
                                                     {context, &declared, mode});
    if (rendered.ok()) (void)arun::engine::plan_shell_exports(context, rendered.variables);
  }
  return 0;
}
