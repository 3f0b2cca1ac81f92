#pragma once
// Large outputs kept out of memory (run_services.hpp, output_store): a spilled output is held
// as an out-of-band reference in its place (<arun/stored_output.hpp>: an object whose single
// key is a marker no data can carry). References travel as values do: into the context, a
// foreach's collected list, the journal and the result; whatever reads the value through a
// template or a condition gets the loaded value instead. A step's output is data whatever its
// shape: an object it prints is never a reference (docs/security.md, "Outputs are data, never
// references").

#include <arun/run_services.hpp>
#include <arun/stored_output.hpp>

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace arun::engine {

/// Whether `v` is a spilled-output reference.
bool is_spilled(const boost::json::value& v) noexcept;

/// Whether `v` or anything inside it is one.
bool holds_spilled(const boost::json::value& v) noexcept;

/// The value of a finished instance's output `text`: output_value(text), or, when `outputs`
/// is given and the trimmed text is longer than its threshold, a reference to where it stored
/// the text (in memory as before when it could not store it).
boost::json::value keep_output(std::string_view text, output_store* outputs, std::string_view instance);

/// `v` with every reference in it replaced by the value it stands for; an error text when a
/// stored output cannot be read.
std::variant<boost::json::value, std::string> load_spilled(const boost::json::value& v, output_store& outputs);

}  // namespace arun::engine
