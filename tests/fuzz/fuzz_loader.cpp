// libFuzzer target: the recipe loader and validator on arbitrary bytes. Any crash, hang,
// sanitizer report or exception escaping is a bug (bad input must become diagnostics).
#include "recipe/recipe_loader.hpp"

#include <arun/validation.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  arun::io::load_limits limits;
  limits.max_nodes = 100'000;  // keep each input fast; the bound itself is what is exercised
  auto r = arun::io::load_recipe_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml", limits);
  if (r.value) {
    (void)arun::validate_recipe(*r.value);
    (void)arun::unsupported_features(*r.value);
  }
  return 0;
}
