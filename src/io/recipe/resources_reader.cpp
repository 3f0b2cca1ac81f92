#include "recipe/resources_reader.hpp"

#include "recipe/yaml_json.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <regex>
#include <utility>

namespace arun::io {
namespace {

// Longer values are refused before std::regex sees them: its matcher recurses once per
// character, and a value of some 50 KB would overflow the stack.
constexpr std::size_t max_value_length = 256;
// A scheduler's time limit beyond a year is a typo (Slurm's own limit is about 1,000 years).
constexpr long long max_time_seconds = 366LL * 24 * 3600;

bool has_template(std::string_view text) { return text.find("{{") != std::string_view::npos; }

std::optional<long long> whole_number(std::string_view digits) {
  long long n = 0;
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

// "1h30m", "90m", "45s", "2d".
std::optional<long long> with_units(std::string_view text) {
  static const std::regex pattern("([0-9]+[dhms])+");
  if (text.size() > max_value_length || !std::regex_match(text.begin(), text.end(), pattern)) return std::nullopt;
  long long total = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] >= '0' && text[i] <= '9') continue;
    const auto n = whole_number(text.substr(start, i - start));
    if (!n) return std::nullopt;
    const long long unit = text[i] == 'd' ? 86400 : text[i] == 'h' ? 3600 : text[i] == 'm' ? 60 : 1;
    total += *n * unit;
    start = i + 1;
  }
  return total;
}

// Slurm's --time forms other than a bare number of minutes.
std::optional<long long> slurm_form(std::string_view text) {
  long long days = 0;
  const auto dash = text.find('-');
  const bool has_days = dash != std::string_view::npos;
  if (has_days) {
    const auto d = whole_number(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    text.remove_prefix(dash + 1);
  } else if (text.find(':') == std::string_view::npos) {
    return std::nullopt;
  }
  std::array<long long, 3> parts{};
  std::size_t count = 0;
  while (true) {
    const auto colon = text.find(':');
    const auto n = whole_number(text.substr(0, colon));
    if (!n || count == parts.size()) return std::nullopt;
    parts[count++] = *n;
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  long long h = 0, m = 0, s = 0;
  if (count == 3) h = parts[0], m = parts[1], s = parts[2];  // [D-]HH:MM:SS
  else if (has_days && count == 2) h = parts[0], m = parts[1];  // D-HH:MM
  else if (count == 2) m = parts[0], s = parts[1];              // MM:SS
  else h = parts[0];                                            // D-HH
  if (m >= 60 || s >= 60 || (has_days && h >= 24)) return std::nullopt;
  return ((days * 24 + h) * 60 + m) * 60 + s;
}

struct refusal {
  std::string_view option;
  std::string_view why;
};

constexpr std::array refused_options = {
    refusal{"--parsable", "arun reads the job id from sbatch's reply"},
    refusal{"--job-name", "the job name ties the job to the run (arun-SESSION)"},
    refusal{"--comment", "the comment names the step's instance"},
    refusal{"--output", "the step's output goes to its job directory"},
    refusal{"--error", "the step's output goes to its job directory"},
    refusal{"--input", "the step's input comes from arun"},
    refusal{"--open-mode", "arun sets it for Slurm's own log"},
    refusal{"--chdir", "use the step's working_dir"},
    refusal{"--export", "the step's environment is the step's env"},
    refusal{"--export-file", "the step's environment is the step's env"},
    refusal{"--wrap", "arun writes the job's script"},
    refusal{"--array", "arun decides how a foreach is submitted"},
    refusal{"--wait", "arun follows its jobs itself"},
    refusal{"--test-only", "nothing would run"},
    refusal{"--hold", "arun would wait for the job forever"},
    refusal{"--ntasks", "a step is one task"},
    refusal{"--cpus-per-task", "use resources.cpus"},
    refusal{"--mem", "use resources.mem"},
    refusal{"--time", "use resources.time"},
    refusal{"--partition", "use resources.partition"},
    refusal{"--gpus", "use resources.gpus"},
    refusal{"--licenses", "use resources.licenses"},
    refusal{"--clusters", "arun follows its jobs on the cluster its Slurm clients talk to"},
};

void read_time(const field_reader& f, step_resources& r) {
  const auto n = f.node("time");
  if (!n) return;
  const auto v = n.IsScalar() ? scalar_to_json(n) : boost::json::value();
  if (v.is_number()) {
    f.error("time", "'time' needs a unit: a bare number is seconds in arun's timeouts but minutes in Slurm's --time",
            "write \"30m\", \"2h\", \"1h30m\" or Slurm's \"HH:MM:SS\"");
    return;
  }
  if (v.is_string() && has_template(v.get_string())) {
    f.error("time", "resources are read when the recipe loads: templates are not rendered in 'time'");
    return;
  }
  const auto t = v.is_string() ? parse_resource_time(v.get_string()) : std::nullopt;
  if (t && t->count() > max_time_seconds) {
    f.error("time", "'time' is more than a year", "a scheduler's limit that long is a typo: check the units");
    return;
  }
  if (!t || t->count() <= 0) {
    f.error("time", "'time' must be a duration such as \"90m\", \"2h\", \"1d\" or Slurm's \"HH:MM:SS\" / \"D-HH:MM:SS\"");
    return;
  }
  r.time = *t;
}

void read_text_field(const field_reader& f, const char* key, const std::regex& pattern, std::string& into,
                     const char* expected, const char* hint = "") {
  const auto n = f.node(key);
  if (!n) return;
  const auto v = n.IsScalar() ? scalar_to_json(n) : boost::json::value();
  std::string text;
  if (v.is_int64() && v.get_int64() > 0)
    text = std::to_string(v.get_int64());
  else if (v.is_string())
    text = std::string(v.get_string());
  if (has_template(text)) {
    f.error(key, "resources are read when the recipe loads: templates are not rendered in '" + std::string(key) + "'");
    return;
  }
  if (text.size() > max_value_length || !std::regex_match(text, pattern)) {
    f.error(key, "'" + std::string(key) + "' must be " + expected, hint);
    return;
  }
  into = std::move(text);
}

void read_licenses(const field_reader& f, step_resources& r) {
  const auto n = f.node("licenses");
  if (!n) return;
  if (!n.IsMap()) {
    f.error("licenses", "'licenses' must be a mapping of license names to counts", "licenses: {claude: 1}");
    return;
  }
  static const std::regex name_pattern("[A-Za-z0-9_.@-]{1,64}");  // bounded: no deep recursion
  for (const auto& kv : n) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    const auto count = kv.second.IsScalar() ? scalar_to_json(kv.second) : boost::json::value();
    if (!std::regex_match(name, name_pattern))
      f.sink().error(kv.first.Mark(), "license names use letters, digits, '_', '.', '@' and '-'", "licenses");
    else if (!count.is_int64() || count.get_int64() < 1 || count.get_int64() > 1'000'000)
      f.sink().error(kv.second.Mark(), "license '" + name + "' needs a count from 1 to 1000000", "licenses");
    else if (!r.licenses.emplace(name, static_cast<int>(count.get_int64())).second)
      f.sink().error(kv.first.Mark(), "license '" + name + "' is written twice", "licenses");
  }
}

// "--name" or "--name=value", name a letter then letters, digits and '-'.
bool long_option(std::string_view text) {
  if (!text.starts_with("--") || text.size() < 3 || text.size() > 4096) return false;
  const auto name = text.substr(2, text.find('=') == std::string_view::npos ? std::string_view::npos : text.find('=') - 2);
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
}

std::string_view option_name(std::string_view option) { return option.substr(0, option.find('=')); }

void read_extra(const field_reader& f, step_resources& r) {
  const auto n = f.node("extra");
  if (!n) return;
  std::vector<yaml::node> items;
  if (n.IsSequence())
    for (const auto& item : n) items.push_back(item);
  else
    items.push_back(n);
  for (const auto& item : items) {
    const auto v = item.IsScalar() ? scalar_to_json(item) : boost::json::value();
    const std::string text = v.is_string() ? std::string(v.get_string()) : std::string();
    if (has_template(text)) {
      f.sink().error(item.Mark(), "resources are read when the recipe loads: templates are not rendered in 'extra'", "extra");
      continue;
    }
    if (!long_option(text)) {
      f.sink().error(item.Mark(), "'extra' entries are sbatch options in their long form, one per entry", "extra",
                     "write \"--account=lab\", not \"-A lab\"");
      continue;
    }
    const auto name = std::string(option_name(text));
    if (auto why = refused_extra_option(text); !why.empty()) {
      f.sink().error(item.Mark(), "'" + name + "' cannot be given in 'extra': " + why, "extra");
      continue;
    }
    if (std::any_of(r.extra.begin(), r.extra.end(), [&](const std::string& o) { return option_name(o) == name; })) {
      f.sink().error(item.Mark(), "'" + name + "' is given twice in 'extra'", "extra");
      continue;
    }
    r.extra.push_back(text);
  }
  // Options sbatch refuses together with a field written beside them.
  for (const auto& option : r.extra) {
    const auto name = option_name(option);
    if (!r.memory.empty() && (name == "--mem-per-cpu" || name == "--mem-per-gpu"))
      f.error("extra", "'" + std::string(name) + "' and 'mem' cannot both be given: sbatch refuses them together");
    if (!r.gpus.empty() && name == "--gres")
      f.error("extra", "'--gres' and 'gpus' cannot both be given", "ask for GPUs in one place: gpus: \"a100:2\"");
  }
}

}  // namespace

std::optional<std::chrono::seconds> parse_resource_time(std::string_view text) {
  auto seconds = with_units(text);
  if (!seconds) seconds = slurm_form(text);
  if (!seconds) return std::nullopt;
  return std::chrono::seconds(*seconds);
}

std::string refused_extra_option(std::string_view option) {
  const auto name = option_name(option);
  // sbatch takes an unambiguous abbreviation (getopt_long): `--job-nam` is `--job-name`.
  for (const auto& r : refused_options)
    if (name.size() > 2 && r.option.starts_with(name))
      return std::string(r.why) + (name == r.option ? "" : " (sbatch reads '" + std::string(name) + "' as '" +
                                                           std::string(r.option) + "')");
  return {};
}

std::shared_ptr<const step_resources> read_resources(const field_reader& parent) {
  const auto node = parent.node("resources");
  if (!node) return nullptr;
  if (!node.IsMap()) {
    parent.error("resources", "'resources' must be a mapping (cpus, mem, time, partition, gpus, licenses, extra)");
    return nullptr;
  }
  const field_reader f(node, parent.sink(), "the resources of " + parent.where());
  f.check_keys({"cpus", "mem", "time", "partition", "gpus", "licenses", "extra"});
  step_resources r;
  if (auto n = f.integer("cpus", 1, 100000)) r.cpus = static_cast<int>(*n);
  static const std::regex memory("[0-9]{1,12}[KMGTkmgt]?");
  read_text_field(f, "mem", memory, r.memory, "a size such as 4096 (megabytes), 512M, 4G or 1T",
                  "Slurm's --mem syntax: a number with K, M, G or T");
  read_time(f, r);
  static const std::regex partition("[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*");
  read_text_field(f, "partition", partition, r.partition, "a partition name (or several, comma-separated)");
  static const std::regex gpus("([A-Za-z0-9_.-]+:)?[1-9][0-9]{0,4}");
  read_text_field(f, "gpus", gpus, r.gpus, "a count, or TYPE:COUNT such as a100:2");
  read_licenses(f, r);
  read_extra(f, r);
  if (r.empty()) return nullptr;
  return std::make_shared<const step_resources>(std::move(r));
}

}  // namespace arun::io
