// libFuzzer target: what `arun resume` reads from a session directory — state.json and the
// journal — on arbitrary bytes. Any crash, hang, sanitizer report or escaping exception is a
// bug: damage must become a refusal or a notice. The input is the journal; with a NUL byte
// in it, the part before the NUL is state.json instead of a valid one.
#include "files/json_text.hpp"
#include "session/session_record.hpp"
#include "session/session_store.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <variant>

namespace {

std::string made_root;  // what session_root made, removed when the fuzzer exits

void remove_made_root() {
  std::error_code ec;
  std::filesystem::remove_all(made_root, ec);
}

const std::string& session_root() {
  static const std::string root = [] {
    const auto dir = std::filesystem::temp_directory_path() / ("arun-fuzz-session-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "s1");
    // libFuzzer ends by exit() when its runs or time are over: no fuzz run leaves a folder.
    made_root = dir.string();
    std::atexit(remove_made_root);
    std::ofstream(dir / "s1" / "recipe.yaml") << "name: x\nsteps:\n  - id: a\n    command: x\n";
    std::ofstream(dir / "s1" / "origin.json") << R"({"format":1,"recipe_path":"/r.yaml","invocation":{}})";
    return dir.string();
  }();
  return root;
}

void write(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  const auto state = nul == std::string_view::npos ? std::string_view(R"({"format":1,"status":"failed","records":3})")
                                                   : input.substr(0, nul);
  const auto journal = nul == std::string_view::npos ? input : input.substr(nul + 1);
  boost::system::error_code ec;
  (void)arun::io::parse_json_text(input, ec);
  for (std::size_t start = 0; start < journal.size();) {
    const auto end = std::min(journal.find('\n', start), journal.size());
    (void)arun::io::parse_journal_line(journal.substr(start, end - start));
    start = end + 1;
  }
  const auto dir = session_root() + "/s1";
  write(dir + "/state.json", state);
  write(dir + "/journal.jsonl", journal);
  auto opened = arun::io::session_store::open(session_root(), "s1", size % 2 == 1);
  if (auto* store = std::get_if<std::unique_ptr<arun::io::session_store>>(&opened)) {
    (void)(*store)->find("a");
    (void)(*store)->notices();
  }
  return 0;
}
