// `arun logs ID [INSTANCE-GLOB] [--stream out|err] [-f]`: the output every step instance of a
// session printed, from its `logs/` (session/instance_logs.hpp). With -f it follows the files
// as a running arun writes them, from any terminal, until that run ends.
#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance_glob.hpp"
#include "run_output.hpp"
#include "session_argument.hpp"

#include "session/instance_logs.hpp"
#include "session/transcripts.hpp"
#include "session/session_record.hpp"
#include "session/session_store.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <variant>
#include <thread>

namespace arun::cli {
namespace {

namespace fs = std::filesystem;

constexpr auto follow_interval = std::chrono::milliseconds(250);

// `fan[9]` before `fan[10]`: runs of digits compare as numbers.
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      const auto i0 = i, j0 = j;
      while (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i]))) ++i;
      while (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j]))) ++j;
      const auto x = a.substr(i0, i - i0), y = b.substr(j0, j - j0);
      const auto xs = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      const auto ys = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (xs.size() != ys.size()) return xs.size() < ys.size();
      if (xs != ys) return xs < ys;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // `x01` and `x1`: equal as numbers, still two ids
}

// One stream of one instance: its file and, when it was rotated, the file before it.
struct log_key {
  std::string instance;
  bool hooks = false;
  output_stream stream = output_stream::out;
};

// Logs in the order the recipe runs its steps (the session's step list), then by instance id
// (iterations by number); for each instance stdout, stderr, then its hooks'.
struct log_order {
  std::shared_ptr<const std::map<std::string, std::size_t, std::less<>>> rank;

  std::size_t rank_of(std::string_view instance) const {
    const auto it = rank->find(instance.substr(0, instance.find_first_of("[/")));
    return it == rank->end() ? rank->size() : it->second;
  }
  bool operator()(std::string_view a, std::string_view b) const {
    const auto ra = rank_of(a), rb = rank_of(b);
    return ra != rb ? ra < rb : natural_less(a, b);
  }
  bool operator()(const log_key& a, const log_key& b) const {
    if (a.instance != b.instance) return (*this)(std::string_view(a.instance), std::string_view(b.instance));
    if (a.hooks != b.hooks) return !a.hooks;
    return a.stream == output_stream::out && b.stream == output_stream::err;
  }
};

// The recipe's top-level steps in order, from the session's state.json (none when unreadable).
log_order order_of_session(const std::string& session) {
  auto rank = std::make_shared<std::map<std::string, std::size_t, std::less<>>>();
  const auto state = io::session_store::read_state(session);
  if (const auto* st = std::get_if<boost::json::object>(&state))
    if (const auto* steps = st->if_contains("steps"); steps && steps->is_array())
      for (const auto& step : steps->get_array())
        if (const auto* id = step.is_object() ? step.get_object().if_contains("step_id") : nullptr; id && id->is_string())
          rank->emplace(std::string(id->get_string()), rank->size());
  return {std::move(rank)};
}

std::string describe(const log_key& k) {
  return fmt::format("{}{} ({})", k.instance, k.hooks ? " hooks" : "", k.stream == output_stream::out ? "stdout" : "stderr");
}

// Where a followed file was read up to.
struct read_position {
  ino_t inode = 0;
  std::uint64_t offset = 0;
};

class log_reader {
public:
  log_reader(std::string dir, const logs_settings& s, log_order order)
      : dir_(std::move(dir)), settings_(s), order_(std::move(order)) {}

  // The logs of the instances asked for, sorted.
  std::map<log_key, std::string, log_order> scan() const {
    std::map<log_key, std::string, log_order> out(order_);
    const auto failed = settings_.failed ? failed_instances() : std::set<std::string, std::less<>>{};
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      const auto relative = it->path().lexically_relative(dir_).string();
      const auto name = io::parse_instance_log_path(relative);
      if (!name || name->rotated) continue;
      if (!settings_.stream.empty() && settings_.stream != (name->stream == output_stream::out ? "out" : "err")) continue;
      if (!settings_.instance_glob.empty() && !instance_glob_match(settings_.instance_glob, name->instance)) continue;
      if (settings_.failed && !failed.contains(name->instance)) continue;
      out.emplace(log_key{name->instance, name->hooks, name->stream}, it->path().string());
    }
    return out;
  }

  // --failed: the instances whose last journal record says failed (read anew on each pass of
  // --follow: a running fan-out fails more as it goes). Through the session's descriptor.
  std::set<std::string, std::less<>> failed_instances() const {
    std::set<std::string, std::less<>> out;
    for (auto& f : io::failed_in_session(fs::path(dir_).parent_path().string())) out.insert(std::move(f.instance));
    return out;
  }

  // Every instance with a log, for the message when the glob matches none.
  std::vector<std::string> instances() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      if (const auto name = io::parse_instance_log_path(it->path().lexically_relative(dir_).string()))
        if (std::find(out.begin(), out.end(), name->instance) == out.end()) out.push_back(name->instance);
    std::sort(out.begin(), out.end(), [this](const auto& a, const auto& b) { return order_(a, b); });
    return out;
  }

  // Prints what `path` holds past `at`, first the rest of the rotated file when the one read
  // before was rotated away; updates `at`. False when stdout cannot be written.
  bool print_new(const log_key& key, const std::string& path, read_position& at, bool headers) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return true;
    if (at.inode != 0 && at.inode != st.st_ino) {
      struct stat old{};
      const auto rotated = path + ".1";
      if (::stat(rotated.c_str(), &old) == 0 && old.st_ino == at.inode && !copy(key, rotated, at.offset, headers))
        return false;
      at.offset = 0;
    } else if (at.inode == 0) {
      // The first look: the rotated file's output came first.
      std::uint64_t from = 0;
      if (!copy(key, path + ".1", from, headers)) return false;
    }
    at.inode = st.st_ino;
    if (static_cast<std::uint64_t>(st.st_size) < at.offset) at.offset = 0;  // truncated: a resume started it anew
    return copy(key, path, at.offset, headers);
  }

private:
  // Copies `path` from `offset` to stdout, with a header when another file was printed last.
  bool copy(const log_key& key, const std::string& path, std::uint64_t& offset, bool headers) {
    std::FILE* in = std::fopen(path.c_str(), "rb");
    if (!in) return true;
    bool ok = true;
    if (::fseeko(in, static_cast<off_t>(offset), SEEK_SET) == 0) {
      char buffer[64 * 1024];
      while (ok) {
        const auto n = std::fread(buffer, 1, sizeof buffer, in);
        if (n == 0) break;
        if (headers && last_printed_ != describe(key)) {
          ok = write_stdout(fmt::format("{}==> {} <==\n", last_printed_.empty() ? "" : "\n", describe(key)));
          last_printed_ = describe(key);
        }
        ok = ok && write_stdout(std::string_view(buffer, n));
        offset += n;
      }
    }
    std::fclose(in);
    return ok;
  }

  std::string dir_;
  const logs_settings& settings_;
  log_order order_;
  std::string last_printed_;
};


// --transcript: the agent calls of the matching instances, in instance order.
int print_transcripts(const logs_settings& s, const std::string& session) {
  std::string why;
  auto all = io::read_transcripts(session, why);
  if (!why.empty()) std::fprintf(stderr, "arun: warning: %s\n", why.c_str());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return natural_less(a.instance, b.instance); });
  std::string text;
  std::vector<std::string> known;
  for (const auto& t : all) {
    known.push_back(t.instance);
    if (s.instance_glob.empty() || instance_glob_match(s.instance_glob, t.instance)) text += io::transcript_to_text(t);
  }
  if (!text.empty()) return write_stdout(text) ? exit_success : exit_output_failed;
  if (known.empty()) {
    std::fprintf(stderr, "arun: session %s has no agent transcript (no agent step ran)\n", s.session_id.c_str());
    return s.instance_glob.empty() ? exit_success : exit_usage;
  }
  std::string listed;
  for (std::size_t i = 0; i < known.size() && i < 8; ++i) listed += (i ? ", " : "") + known[i];
  if (known.size() > 8) listed += fmt::format(", … ({} in all)", known.size());
  std::fprintf(stderr, "arun: no agent transcript of session %s matches '%s'; agent instances: %s\n",
               s.session_id.c_str(), s.instance_glob.c_str(), listed.c_str());
  return exit_usage;
}

}  // namespace

std::vector<std::string> logged_instances(const std::string& session) {
  const logs_settings every;
  return log_reader(session + "/logs", every, order_of_session(session)).instances();
}

int logs_command(const logs_settings& given) {
  const auto named = find_named_session(given.session_dir, given.session_id);
  if (!named) return exit_usage;
  logs_settings s = given;
  s.session_id = named->id;
  const auto session = named->dir();
  const auto order = order_of_session(session);
  log_reader reader(session + "/logs", s, order);
  std::map<log_key, read_position, log_order> positions(order);
  auto print_all = [&]() {
    const auto logs = reader.scan();
    // Headers when several logs are printed, or may be (following a running fan-out).
    const bool headers = logs.size() > 1 || s.follow;
    for (const auto& [key, path] : logs)
      if (!reader.print_new(key, path, positions[key], headers)) return false;
    return true;
  };
  if (s.transcript) return print_transcripts(s, session);
  if (!s.follow) {
    if (!print_all()) return exit_output_failed;
    if (!positions.empty()) return exit_success;
    const auto known = reader.instances();
    const bool glob_matches = std::any_of(known.begin(), known.end(), [&](const std::string& instance) {
      return s.instance_glob.empty() || instance_glob_match(s.instance_glob, instance);
    });
    if (s.failed && glob_matches) {
      std::fprintf(stderr, "arun: no instance of session %s%s failed with output kept\n", s.session_id.c_str(),
                   s.instance_glob.empty() ? "" : (" matching '" + s.instance_glob + "'").c_str());
      return exit_success;
    }
    if (known.empty()) {
      std::fprintf(stderr, "arun: no step of session %s has printed anything\n", s.session_id.c_str());
      return exit_success;
    }
    std::string listed;
    for (std::size_t i = 0; i < known.size() && i < 8; ++i) listed += (i ? ", " : "") + known[i];
    if (known.size() > 8) listed += fmt::format(", … ({} in all)", known.size());
    std::fprintf(stderr, "arun: no log of session %s matches '%s'%s; instances with output: %s\n", s.session_id.c_str(),
                 s.instance_glob.c_str(), s.stream.empty() ? "" : (" (std" + s.stream + ")").c_str(), listed.c_str());
    return exit_usage;
  }
  // Follow: print what is there, then what arrives, until no arun holds the session; one last
  // pass after that takes what the run wrote while it ended.
  while (true) {
    const bool live = io::session_is_live(session);
    if (!print_all()) return exit_output_failed;
    if (!live) return exit_success;
    std::this_thread::sleep_for(follow_interval);
  }
}

}  // namespace arun::cli
