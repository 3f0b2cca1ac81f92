#pragma once
// What commands print on stdout (docs/reference/formats.md, "Conventions"): only the final result,
// a plan, a document. A write that fails (a full disk, a closed pipe) is an error, never a silent
// success.

#include "output/result_format.hpp"

#include <arun/plan.hpp>
#include <arun/results.hpp>

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace arun::io {
class secret_masker;
}

namespace arun::cli {

/// Writes and flushes `text`; on failure says why on stderr and returns false. A closed pipe
/// (EPIPE: the reader stopped reading) is not a failure.
[[nodiscard]] bool write_stdout(std::string_view text);
/// A JSON document (arun's JSON text: valid UTF-8 always) and a newline.
[[nodiscard]] bool write_json_stdout(const boost::json::value& document);

/// With `masker`, the result's secrets are masked; with `logs`, failures name their logs.
[[nodiscard]] bool print_result(const run_result& result, const std::string& format,
                                const io::secret_masker* masker = nullptr, const io::log_locator& logs = {});
[[nodiscard]] bool print_plan(const std::vector<planned_step>& plan, const recipe& r, const std::string& format,
                              const io::secret_masker* masker = nullptr);

}  // namespace arun::cli
