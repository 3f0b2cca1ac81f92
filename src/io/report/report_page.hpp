#pragma once
// The parts of the report page (src/io/report/web), compiled in by CMake.

#include <string_view>

namespace arun::io {

/// report.html: the page, with the marks report_html fills in.
std::string_view report_page_html();
/// report.css
std::string_view report_page_css();
/// report.js: draws the page from the JSON document it finds in the page.
std::string_view report_page_script();

}  // namespace arun::io
