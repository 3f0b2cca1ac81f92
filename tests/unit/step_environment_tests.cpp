#include <catch2/catch.hpp>

#include <algorithm>

#include "executor/step_environment.hpp"
#include "temp_dir.hpp"

#include <filesystem>

using arun::io::build_step_environment;
using arun::io::missing_tool;

// The base without AMPLIFIER_PYTHON, whose value depends on the machine (tested below).
std::vector<std::string> without_python(std::vector<std::string> env) {
  std::erase_if(env, [](const std::string& kv) { return kv.starts_with("AMPLIFIER_PYTHON="); });
  return env;
}

TEST_CASE("HOME and PATH get defaults only when unset") {
  const auto env = without_python(build_step_environment({"HOME=/home/me", "OTHER=1"}, {}));
  CHECK(env == std::vector<std::string>{"HOME=/home/me", "OTHER=1", "PATH=/usr/local/bin:/usr/bin:/bin",
                                        "NONINTERACTIVE=1", "DEBIAN_FRONTEND=noninteractive", "CI=true"});
}

TEST_CASE("hardening values replace inherited ones and overrides win, in order") {
  const auto env = build_step_environment({"CI=false", "PATH=/x"}, {{"A", "1"}, {"CI", "yes"}, {"A", "2"}});
  CHECK(env == std::vector<std::string>{"CI=yes", "PATH=/x", "HOME=/root", "NONINTERACTIVE=1",
                                        "DEBIAN_FRONTEND=noninteractive", "A=2"});
}

TEST_CASE("entries that are not variables are dropped") {
  const auto env = without_python(build_step_environment({"garbage", "=x", "OK=a=b"}, {}));
  CHECK(env.front() == "OK=a=b");
  CHECK(env.size() == 6);
}

TEST_CASE("missing_tool reads bash's command-not-found message on exit 127 only") {
  CHECK(missing_tool(127, "bash: line 1: jq: command not found\n") == "jq");
  CHECK(missing_tool(127, "something\n/tmp/arun-body-x: line 3: yq: command not found\n") == "yq");
  CHECK(missing_tool(127, "bash: jq: command not found") == "jq");
  CHECK(missing_tool(1, "bash: line 1: jq: command not found\n").empty());
  CHECK(missing_tool(127, "exit 127 for another reason\n").empty());
}

TEST_CASE("one base environment serves many steps without their overrides leaking between them") {
  const arun::io::base_environment base({"KEEP=1", "CI=false"});
  const auto first = base.with({{"A", "1"}, {"A", "2"}, {"KEEP", "x"}});
  const auto second = base.with({{"B", "3"}});
  CHECK(std::count(first.begin(), first.end(), "A=2") == 1);
  CHECK(std::find(first.begin(), first.end(), "A=1") == first.end());
  CHECK(first.front() == "KEEP=x");  // a base name keeps its position
  CHECK(std::find(second.begin(), second.end(), "A=2") == second.end());
  CHECK(second.front() == "KEEP=1");
  CHECK(std::find(second.begin(), second.end(), "CI=true") != second.end());
  CHECK(second.back() == "B=3");
}

TEST_CASE("AMPLIFIER_PYTHON is the python3 on PATH, unless the caller set it") {
  arun::test::temp_dir dir("arun-python");
  const auto bin = dir.root / "bin";
  std::filesystem::create_directories(bin);
  const auto python = dir.write("bin/python3", "#!/bin/sh\n");
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  const auto env = build_step_environment({"PATH=/nonexistent:" + bin.string()}, {});
  CHECK(std::find(env.begin(), env.end(), "AMPLIFIER_PYTHON=" + python) != env.end());
  const auto chosen = build_step_environment({"PATH=" + bin.string(), "AMPLIFIER_PYTHON=/opt/py/bin/python"}, {});
  CHECK(std::find(chosen.begin(), chosen.end(), "AMPLIFIER_PYTHON=/opt/py/bin/python") != chosen.end());
  const auto none = build_step_environment({"PATH=/nonexistent"}, {});
  CHECK(std::none_of(none.begin(), none.end(), [](const std::string& kv) { return kv.starts_with("AMPLIFIER_PYTHON="); }));
}
