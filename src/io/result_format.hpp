#pragma once
// The final result on stdout (SPEC §13): a JSON object, or text lines for people.

#include <arun/results.hpp>

#include <boost/json/object.hpp>

#include <string>

namespace arun::io {

/// The SPEC §13 result object.
boost::json::object result_to_json(const run_result& r);

/// One line for the run, then one line per step.
std::string result_to_text(const run_result& r);

}  // namespace arun::io
