#pragma once
// What each agent instance was asked and answered, kept in its session: one JSON line per
// call in the session's `transcripts.jsonl`, naming its instance, with the argv (secrets
// masked), model, system prompt, rendered prompt (a correction round's included), the full
// reply, how it ended and its usage. `arun logs ID INSTANCE --transcript` prints them. Each
// text is cut at --max-output. One file for the whole session, kept open: a fan-out of
// hundreds of agents creates no file per instance. Writes go through the session's
// background_writer, so a stalled disk never stalls the run.

#include "files/background_writer.hpp"
#include "output/secret_masker.hpp"

#include <arun/results.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// One agent call.
struct agent_call_record {
  std::string instance;
  std::chrono::system_clock::time_point started{}, ended{};
  std::vector<std::string> argv;
  std::string model;
  std::string system_prompt;
  std::string prompt;
  std::string reply;  ///< the reply text (from the CLI's JSON output when it has one)
  std::optional<int> exit_code;
  std::string error;  ///< why the call failed; empty when it succeeded
  std::optional<agent_usage> usage;
  bool cut = false;  ///< a text was cut at the bound
};

/// One line of the transcript file read back; none for a line that is not a whole record (a
/// torn last line after a crash).
std::optional<agent_call_record> parse_transcript_line(std::string_view line);

/// The session's transcript file, `transcripts.jsonl`.
std::string transcripts_file(const std::string& session_dir);

class transcript_store {
public:
  /// `path`: the session's transcript file, made (0600) at the first call and appended to
  /// (a resume adds its calls). Each text of a record is cut at `max_bytes`; `masker` (may be
  /// null) masks secrets in all of them.
  transcript_store(std::string path, std::size_t max_bytes, std::shared_ptr<background_writer> writer,
                   const secret_masker* masker);

  /// Queues one line for the file. Never throws; a failure is kept for error().
  void record(const agent_call_record& call) noexcept;
  /// The first error writing a transcript; empty if none.
  std::string error() const;

private:
  std::size_t max_bytes_;
  std::shared_ptr<background_writer> writer_;
  const secret_masker* masker_;
  // Opened by the writer's first job and closed when the last queued job is done with it.
  struct open_file;
  std::shared_ptr<open_file> file_;
};

/// The calls of every instance, in the order each first called (natural order is the
/// caller's), each instance's calls in the order made. `why` is set when the file exists but
/// cannot be read.
struct instance_transcript {
  std::string instance;
  std::vector<agent_call_record> calls;
};
std::vector<instance_transcript> read_transcripts(const std::string& session_dir, std::string& why);

/// A transcript as a person reads it: per call a header line, the argv, then the system
/// prompt, prompt and reply under headings.
std::string transcript_to_text(const instance_transcript& t);

}  // namespace arun::io
