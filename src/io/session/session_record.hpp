#pragma once
// One line of a session's journal (docs/sessions.md, "Where sessions live"): a finished step
// instance — its result and the context delta it wrote — as JSON, and back.

#include "output/secret_masker.hpp"

#include <arun/run_services.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// The status a journal or event line names (`to_string(step_status)`); none for other text.
std::optional<step_status> status_from(std::string_view text);

/// `{"instance", "status", "fatal", "result": <step_results entry>, "delta": {...}}`, plus
/// `stored_outputs` when a value holds stored outputs (journal_references.hpp: the values hold
/// stand-ins, the list says where the references were). A sub-recipe step's `children` are
/// kept one level deep (run_journal::find's callers restore the rest from the children's own
/// records).
boost::json::object journal_record(const step_result& result, const boost::json::object& context_delta);

/// The journal line of a record, newline included: journal_record's compact JSON with a
/// `"crc"` member last — the CRC-32 of the line without that member, as 8 hex digits — so a
/// damaged line is told from a whole one.
/// With `masker`, the record's secrets are masked before the checksum is taken.
std::string journal_line(const step_result& result, const boost::json::object& context_delta,
                         const secret_masker* masker = nullptr);

/// The journal line of one agent call's usage, newline included: `{"call_of": INSTANCE,
/// "usage": {...}}` checksummed as journal_line's. Written the moment the call's usage is
/// known, whatever then becomes of its instance: a resume counts every call against the
/// budget (docs/sessions.md).
std::string usage_line(std::string_view instance, const agent_usage& call, const secret_masker* masker = nullptr);
/// What a usage_line holds: the instance that made the call, and the call's usage.
struct call_usage {
  std::string instance;
  agent_usage usage;
};
/// The call a usage_line holds; none for any other line (an instance's record, damage).
std::optional<call_usage> parse_usage_line(std::string_view line);
/// Whether a line that is no record was meant as a usage line (it names `call_of`): damage
/// there loses what a call cost, not an instance's result.
bool is_usage_line(std::string_view line);

/// The instance a journal line describes; none when the line is not a whole record (a torn
/// last line after a crash, or garbage). Invalid UTF-8 inside strings is accepted. A line
/// whose checksum does not match is not a record either; lines without one (an older arun's)
/// are taken as they read. References are rebuilt from `stored_outputs` only.
std::optional<finished_instance> parse_journal_line(std::string_view line);
/// The instances whose last record in `journal` (the text of journal.jsonl) says failed, in
/// journal order, each with its error's first line (`logs --failed`, `sessions show`). A torn
/// last line says nothing yet.
std::vector<failed_instance> failed_in_journal(std::string_view journal);
/// failed_in_journal() of the session in `session_dir`, its journal read through the
/// session's own descriptor (owned_dir: never a link, never blocking on a FIFO); none when
/// it cannot be read.
std::vector<failed_instance> failed_in_session(const std::string& session_dir);

/// Whether a line carries a checksum that does not match its text.
bool checksum_mismatch(std::string_view line);

/// A `step_results` entry (result_format's step_to_json) read back.
step_result step_from_json(const boost::json::object& o);

}  // namespace arun::io
