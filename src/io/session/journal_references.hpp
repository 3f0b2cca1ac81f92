#pragma once
// Stored outputs in the journal, out of band (docs/reference/formats.md, "Journal"; docs/security.md,
// "Outputs are data, never references"): where a record's value holds a reference, the line holds
// the stand-in, and the record's `stored_outputs` list says where each one was —
// `{"at": JSON pointer, "file": NAME, "bytes": N, "json": BOOL}`. A resume rebuilds references
// from that list only: a value that merely looks like a reference or a stand-in stays data.

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

namespace arun::io {

/// Replaces every reference inside `record`'s `result` and `delta` members by its stand-in and
/// lists them (none: an empty array).
boost::json::array take_references(boost::json::object& record);

/// Puts the references listed in `entries` back at their places in `record` (only inside its
/// `result` and `delta`); entries that are not well formed, or name a place the record does not
/// have, are left out.
void restore_references(boost::json::object& record, const boost::json::value& entries);

}  // namespace arun::io
