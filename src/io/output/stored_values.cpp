#include "output/stored_values.hpp"

#include <arun/stored_output.hpp>

namespace arun::io {
namespace json = boost::json;

namespace {

class inliner {
public:
  inliner(output_store* outputs, std::size_t budget) : outputs_(outputs), left_(budget) {}

  void operator()(json::value& v) {
    if (!holds_stored_output(v)) return;
    v = replace_stored_outputs(v, [this](const stored_output& s) { return value_of(s); });
  }

  void operator()(step_result& s) {
    (*this)(s.output);
    for (auto& child : s.children) (*this)(child);
  }

private:
  json::value value_of(const stored_output& s) {
    if (outputs_ == nullptr) return stored_output_stand_in(s, "not loaded");
    if (s.bytes > left_) return stored_output_stand_in(s, "over --max-output");
    std::string why;
    auto v = load_stored_output(s, *outputs_, why);
    if (!v) return stored_output_stand_in(s, "cannot be read: " + why);
    left_ -= s.bytes;
    return std::move(*v);
  }

  output_store* outputs_;
  std::uint64_t left_;
};

}  // namespace

void put_stored_values(run_result& r, output_store* outputs, std::size_t budget) {
  inliner put(outputs, budget);
  put(r.output);
  for (auto& kv : r.context) put(kv.value());
  for (auto& s : r.step_results) put(s);
}

}  // namespace arun::io
