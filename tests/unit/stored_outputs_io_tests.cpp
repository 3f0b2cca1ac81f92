// Stored outputs on the io side (docs/security.md, "Outputs are data, never references"): a
// stored file is read only by name from the session's outputs/, as a regular file of its
// recorded size; the journal keeps references out of band, and only those come back on resume;
// the result carries values up to --max-output and the stand-in past it.
#include <catch2/catch.hpp>

#include "output/stored_values.hpp"
#include "session/session_record.hpp"
#include "session/stored_file.hpp"
#include "temp_dir.hpp"

#include <arun/stored_output.hpp>
#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>

using namespace arun;
using namespace arun::io;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

struct outputs_dir {
  arun::test::temp_dir tmp{"arun-stored-file"};
  std::string dir = (tmp.root / "outputs").string();
  outputs_dir() { ::mkdir(dir.c_str(), 0700); }
  std::optional<std::string> read(const std::string& name, std::uint64_t bytes, std::string& why) const {
    return read_stored_file(dir, name, bytes, why);
  }
};

class counting_store final : public output_store {
public:
  std::map<std::string, std::string, std::less<>> files;
  std::size_t spill_threshold() const noexcept override { return 4; }
  std::optional<std::string> store(std::string_view, std::string) override { return std::nullopt; }
  std::optional<std::string> load(std::string_view file, std::uint64_t, std::string& why) override {
    const auto it = files.find(file);
    if (it == files.end()) {
      why = "No such file or directory";
      return std::nullopt;
    }
    return it->second;
  }
};

}  // namespace

TEST_CASE("stored file: read by name from the outputs directory at exactly its recorded size") {
  outputs_dir d;
  d.tmp.write("outputs/1-big.txt", "0123456789");
  std::string why;
  CHECK(d.read("1-big.txt", 10, why) == "0123456789");
  CHECK_FALSE(d.read("1-big.txt", 9, why));
  CHECK(why == "it holds 10 bytes, not the 9 stored");
  CHECK_FALSE(d.read("1-big.txt", 1u << 30, why));  // never more than the file
  for (const auto* name : {"/etc/passwd", "../outputs/1-big.txt", "..", ".", "", "sub/1-big.txt"}) {
    CHECK_FALSE(d.read(name, 10, why));
    CHECK(why.find("is not a file name of the session's outputs/ directory") != std::string::npos);
  }
}

TEST_CASE("stored file: symlinks, FIFOs, devices and directories are refused without blocking") {
  outputs_dir d;
  std::string why;
  fs::create_symlink("/etc/passwd", fs::path(d.dir) / "link.txt");
  CHECK_FALSE(d.read("link.txt", fs::file_size("/etc/passwd"), why));
  CHECK(why == "it is a symbolic link");
  REQUIRE(::mkfifo((d.dir + "/fifo.txt").c_str(), 0600) == 0);
  CHECK_FALSE(d.read("fifo.txt", 0, why));  // opened O_NONBLOCK: returns at once
  CHECK(why == "it is a FIFO");
  fs::create_symlink("/dev/zero", fs::path(d.dir) / "zero.txt");
  CHECK_FALSE(d.read("zero.txt", 1, why));
  fs::create_directory(fs::path(d.dir) / "dir.txt");
  CHECK_FALSE(d.read("dir.txt", 0, why));
  CHECK(why == "it is a directory");

  // The directory itself: not a symlink, this user's, not writable by others.
  const auto elsewhere = (d.tmp.root / "elsewhere").string();
  fs::create_directory(elsewhere);
  d.tmp.write("elsewhere/1-big.txt", "0123456789");
  const auto linked = (d.tmp.root / "linked").string();
  fs::create_symlink(elsewhere, linked);
  CHECK_FALSE(read_stored_file(linked, "1-big.txt", 10, why));
  ::chmod(elsewhere.c_str(), 0777);
  CHECK_FALSE(read_stored_file(elsewhere, "1-big.txt", 10, why));
  CHECK(why.find("mode 0777") != std::string::npos);
}

TEST_CASE("journal: stored outputs are kept beside the values and only those come back as references") {
  step_result r;
  r.step_id = "fan";
  r.status = step_status::completed;
  const auto ref = stored_output_reference({"3-fan_1_.txt", 4096, true});
  r.output = json::array{"small", ref};
  // A value a step printed that looks like a stand-in or an old reference stays data.
  const auto printed = json::parse(
      R"({"arun_output_omitted": {"bytes": 3, "file": "outputs/x"}, "arun_spilled_output": "/etc/passwd", "bytes": 1, "json": false})");
  const json::object delta{{"all", r.output}, {"reply", printed}};
  const auto line = journal_line(r, delta);
  CHECK(line.find("stored_outputs") != std::string::npos);
  CHECK(line.find(std::string(ref.as_object().begin()->key())) == std::string::npos);  // the marker is never written
  const auto back = parse_journal_line(line);
  REQUIRE(back);
  REQUIRE(back->result.output.as_array().size() == 2);
  const auto s = as_stored_output(back->result.output.as_array()[1]);
  REQUIRE(s);
  CHECK(s->file == "3-fan_1_.txt");
  CHECK(s->bytes == 4096);
  CHECK(as_stored_output(back->context_delta.at("all").as_array()[1]));
  CHECK(back->context_delta.at("reply") == printed);
  CHECK_FALSE(holds_stored_output(back->context_delta.at("reply")));

  // A line that lists a path, or a place outside the values, gets no reference.
  for (const auto* forged : {
           R"({"instance":"x","status":"completed","result":{"output":1},"delta":{"v":1},"stored_outputs":[{"at":"/delta/v","file":"/etc/passwd","bytes":1,"json":false}]})",
           R"({"instance":"x","status":"completed","result":{"output":1},"delta":{"v":1},"stored_outputs":[{"at":"/delta/v","file":"../x","bytes":1,"json":false}]})",
           R"({"instance":"x","status":"completed","result":{"output":1},"delta":{"v":1},"stored_outputs":[{"at":"/instance","file":"a.txt","bytes":1,"json":false}]})",
           R"({"instance":"x","status":"completed","result":{"output":1},"delta":{"v":1},"stored_outputs":[{"at":"/delta/nothere","file":"a.txt","bytes":1,"json":false}]})",
       }) {
    const auto f = parse_journal_line(forged);
    REQUIRE(f);
    CHECK_FALSE(holds_stored_output(f->result.output));
    CHECK_FALSE(holds_stored_output(json::value(f->context_delta)));
  }
}

TEST_CASE("result: stored outputs carry their values up to --max-output, then the stand-in") {
  counting_store store;
  store.files["1-a.txt"] = R"({"n": 1})";
  store.files["2-b.txt"] = "bbbbbbbb";
  run_result r;
  r.output = stored_output_reference({"1-a.txt", 8, true});
  r.context["gone"] = stored_output_reference({"3-c.txt", 8, true});  // unreadable: spends nothing
  r.context["b"] = stored_output_reference({"2-b.txt", 8, true});
  step_result s;
  s.output = stored_output_reference({"2-b.txt", 8, true});
  r.step_results.push_back(s);
  put_stored_values(r, &store, 16);
  CHECK(r.output == json::parse(R"({"n": 1})"));
  CHECK(r.context.at("b") == "bbbbbbbb");
  CHECK(r.context.at("gone") == json::parse(R"({"arun_output_omitted": {"bytes": 8, "file": "outputs/3-c.txt",
                                                 "reason": "cannot be read: No such file or directory"}})"));
  CHECK(r.step_results[0].output ==
        json::parse(R"({"arun_output_omitted": {"bytes": 8, "file": "outputs/2-b.txt", "reason": "over --max-output"}})"));
}
