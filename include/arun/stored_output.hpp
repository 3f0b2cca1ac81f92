#pragma once
/// Stored outputs (run_services.hpp, output_store; docs/running.md, "Large outputs"): a step
/// output over the store's threshold is kept in a file, and values hold a *reference* to it.
///
/// A reference is out of band: it is an object whose single key is a marker drawn at random
/// when the process starts and never written anywhere, so no step output, file or earlier
/// session can spell one (docs/security.md, "Outputs are data, never references"). Whatever
/// shape a step's output has, it stays data. Every JSON text arun writes (to_compact_json)
/// shows a reference as the stand-in below, never as the marker; the session journal keeps
/// references beside the values (io), and a resumed run rebuilds them from there only.

#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace arun {

class output_store;

/// What a reference names: a file of the store (a name, never a path), its size, and whether
/// its text is read back as a step's output is (JSON when it parses) or as a plain string.
struct stored_output {
  std::string file;
  std::uint64_t bytes = 0;
  bool json = true;
};

/// The reference `v` is, or none: only values made by stored_output_reference are references.
std::optional<stored_output> as_stored_output(const boost::json::value& v);

/// Whether `v` is a reference.
bool is_stored_output(const boost::json::value& v) noexcept;

/// Whether `v` or anything inside it is a reference.
bool holds_stored_output(const boost::json::value& v) noexcept;

/// A reference to `s` (the engine's own, and a journal's replay).
boost::json::value stored_output_reference(const stored_output& s);

/// The documented stand-in written where a stored output's value is not (docs/reference/formats.md):
/// `{"arun_output_omitted": {"bytes": N, "file": "outputs/NAME", "reason": REASON}}`. It is
/// plain data: read back, it is never taken for a reference.
boost::json::value stored_output_stand_in(const stored_output& s, std::string_view reason);

/// `v` with every reference in it replaced by `replace(reference)` (a copy; `v` itself when it
/// holds none).
boost::json::value replace_stored_outputs(const boost::json::value& v,
                                          const std::function<boost::json::value(const stored_output&)>& replace);

/// The value `s` stands for, read from `outputs` (JSON when `s.json` and the text parses, as a
/// step's output would be), or none with the reason in `why`.
std::optional<boost::json::value> load_stored_output(const stored_output& s, output_store& outputs, std::string& why);

}  // namespace arun
