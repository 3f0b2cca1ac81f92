#pragma once
/// How values are written as text: in templates (SPEC §5.2) and in every JSON arun prints.
/// Numbers never come out as `1.5E0` (Boost.JSON's own serializer does that).

#include <boost/json/value.hpp>

#include <string>

namespace arun {

/// Shortest round-trip text of a double, always with a decimal point or exponent:
/// 1.5 -> "1.5", 100000.0 -> "100000.0", 1e300 -> "1e+300". NaN and infinities -> "null".
std::string format_number(double d);

/// Compact JSON (no spaces) using format_number for doubles.
std::string to_compact_json(const boost::json::value& v);

}  // namespace arun
