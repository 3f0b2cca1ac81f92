#pragma once
// What the result and state.json show for stored outputs (docs/running.md, "Large outputs"):
// the value itself while it fits in --max-output, else the documented stand-in
// (<arun/stored_output.hpp>) naming the file.

#include <arun/results.hpp>
#include <arun/run_services.hpp>

#include <cstddef>

namespace arun::io {

/// Replaces, in place, every stored output in `r` (its `output`, `context` and each step
/// result's `output`, in that order, as the JSON result lists them) by its value while the
/// values put in total at most `budget` bytes of stored text; past that by the stand-in with
/// the reason "over --max-output", and one that cannot be read by the stand-in with the
/// reason "cannot be read: WHY". Without `outputs` every one becomes a stand-in.
void put_stored_values(run_result& r, output_store* outputs, std::size_t budget);

}  // namespace arun::io
