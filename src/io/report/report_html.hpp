#pragma once
// The report as one self-contained HTML file (docs/report-and-dashboard.md): the page's HTML,
// CSS and script (src/io/report/web, compiled in) with the report's JSON document inside it.
// It makes no network request: it opens from a file:// URL, a CI artifact or a mail.

#include <boost/json/object.hpp>

#include <string>

namespace arun::io {

/// The HTML page of `report` (session_report's document).
std::string report_html(const boost::json::object& report);

}  // namespace arun::io
