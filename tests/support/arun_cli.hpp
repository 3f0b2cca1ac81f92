#pragma once
// Runs the built `arun` binary (ARUN_BINARY) to completion through the supervisor (e2e tests).

#include "run_sync.hpp"

#include "process/supervisor.hpp"
#include "executor/step_environment.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace arun::test {

struct arun_run {
  int exit_code = -1;
  std::string out, err;
  std::chrono::steady_clock::duration elapsed{};
};

/// `arun ARGS...` in `working_dir` with this process's environment plus `extra_env`
/// ("K=V" replaces K; "K" alone removes it); fails the test if it cannot start or runs longer
/// than `limit`.
inline arun_run run_arun(std::vector<std::string> args, std::string working_dir = ARUN_SOURCE_DIR,
                         std::chrono::seconds limit = std::chrono::seconds(90),
                         const std::vector<std::string>& extra_env = {}) {
  io::process_spec spec;
  spec.launch.argv = {ARUN_BINARY};
  for (auto& a : args) spec.launch.argv.push_back(std::move(a));
  spec.launch.env = io::current_environment();
  for (const auto& kv : extra_env) {
    const auto name = kv.substr(0, kv.find('='));
    std::erase_if(spec.launch.env, [&](const std::string& e) { return e.starts_with(name + "="); });
    if (kv.find('=') != std::string::npos) spec.launch.env.push_back(kv);
  }
  spec.launch.working_dir = std::move(working_dir);
  spec.timeout = limit;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_sync(io::run_process(std::move(spec)));
  REQUIRE(r.launched());
  REQUIRE_FALSE(r.timed_out);
  arun_run out;
  out.exit_code = r.exit_code.value_or(-1);
  out.out = r.out.text;
  out.err = r.err.text;
  out.elapsed = std::chrono::steady_clock::now() - start;
  return out;
}

/// The JSON result arun printed on stdout (--output-format json); fails the test otherwise.
inline boost::json::object result_json(const arun_run& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE_FALSE(r.out.empty());
  boost::json::value v;
  REQUIRE_NOTHROW(v = boost::json::parse(r.out));
  REQUIRE(v.is_object());
  return v.as_object();
}

/// How often `what` occurs in `text` (overlapping ones too): a message said once is said once.
inline std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// A whole file's bytes (empty when it cannot be read).
inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every line of a JSON-lines file (the fake agent's calls.jsonl, a journal) as an object.
inline std::vector<boost::json::object> read_json_lines(const std::filesystem::path& file) {
  std::vector<boost::json::object> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(boost::json::parse(line).as_object());
  return out;
}

/// An event's `ts` (RFC 3339 UTC with milliseconds, "2026-11-25T17:02:03.456Z") as seconds
/// since the epoch; NaN when it does not parse.
inline double epoch_seconds(std::string_view ts) {
  std::tm t{};
  int millis = 0;
  const std::string text(ts);
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour, &t.tm_min,
                  &t.tm_sec, &millis) != 7)
    return std::nan("");
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return static_cast<double>(::timegm(&t)) + millis / 1000.0;
}

}  // namespace arun::test
