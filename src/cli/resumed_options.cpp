#include "resumed_options.hpp"

#include <boost/json/array.hpp>

namespace arun::cli {
namespace {

boost::json::array strings(const std::vector<std::string>& v) { return boost::json::array(v.begin(), v.end()); }

}  // namespace

boost::json::object execution_invocation(const run_settings& s) {
  return {{"max_concurrent", s.max_concurrent},
          {"kill_grace", s.kill_grace},
          {"max_output", s.max_output},
          {"spill_outputs_over", s.spill_outputs_over},
          {"heartbeat", s.heartbeat},
          {"include_tags", strings(s.include_tags)},
          {"exclude_tags", strings(s.exclude_tags)},
          {"log_level", s.log_level}};
}

void keep_execution_options(run_settings& s, const boost::json::object& recorded, const std::set<std::string>& given) {
  // Each is taken only when it has the type it was written with: a state.json edited by hand
  // never turns into a wrong option.
  auto kept = [&](const char* key, const char* option) -> const boost::json::value* {
    const auto* v = recorded.if_contains(key);
    return v && !given.contains(option) ? v : nullptr;
  };
  auto whole = [](const boost::json::value& v, std::uint64_t most) -> std::optional<std::uint64_t> {
    if (v.is_uint64() && v.get_uint64() <= most) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0 && static_cast<std::uint64_t>(v.get_int64()) <= most)
      return static_cast<std::uint64_t>(v.get_int64());
    return std::nullopt;
  };
  auto seconds = [](const boost::json::value& v) -> std::optional<double> {
    if (!v.is_number()) return std::nullopt;
    const double d = v.to_number<double>();
    return d >= 0 && d < 1e9 ? std::optional<double>(d) : std::nullopt;
  };
  auto names = [](const boost::json::value& v) -> std::optional<std::vector<std::string>> {
    if (!v.is_array()) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& item : v.get_array()) {
      if (!item.is_string()) return std::nullopt;
      out.emplace_back(item.get_string());
    }
    return out;
  };
  if (const auto* v = kept("max_concurrent", "max-concurrent"))
    if (const auto n = whole(*v, 4096); n && *n >= 1) s.max_concurrent = static_cast<int>(*n);
  if (const auto* v = kept("kill_grace", "kill-grace"))
    if (const auto d = seconds(*v)) s.kill_grace = *d;
  if (const auto* v = kept("heartbeat", "heartbeat"))
    if (const auto d = seconds(*v)) s.heartbeat = *d;
  if (const auto* v = kept("max_output", "max-output"))
    if (const auto n = whole(*v, std::uint64_t{1} << 40); n && *n >= 1) s.max_output = static_cast<std::size_t>(*n);
  if (const auto* v = kept("spill_outputs_over", "spill-outputs-over"))
    if (const auto n = whole(*v, std::uint64_t{1} << 40)) s.spill_outputs_over = static_cast<std::size_t>(*n);
  if (const auto* v = kept("include_tags", "include-tags"))
    if (auto tags = names(*v)) s.include_tags = std::move(*tags);
  if (const auto* v = kept("exclude_tags", "exclude-tags"))
    if (auto tags = names(*v)) s.exclude_tags = std::move(*tags);
  if (const auto* v = kept("log_level", "log-level"); v && v->is_string()) s.log_level = v->get_string();
}

}  // namespace arun::cli
