#pragma once
// A resume runs as its run ran (docs/sessions.md, "Resuming"): the options that shape how a
// run runs are kept in state.json (`invocation.execution`) and taken again by each resume,
// except those the resume's own command line gives.

#include "commands.hpp"

#include <boost/json/object.hpp>

#include <set>
#include <string>

namespace arun::cli {

/// -j, --kill-grace, --max-output, --spill-outputs-over, --heartbeat, --include-tags,
/// --exclude-tags and --log-level of `s`, as state.json keeps them.
boost::json::object execution_invocation(const run_settings& s);

/// Takes into `s` each option `recorded` (an execution_invocation) holds whose long name is
/// not in `given` (the options the resume's command line gave).
void keep_execution_options(run_settings& s, const boost::json::object& recorded, const std::set<std::string>& given);

}  // namespace arun::cli
