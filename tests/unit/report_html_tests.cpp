// The report page (docs/report-and-dashboard.md): the document goes in as data, whatever its
// strings spell, and the page's own parts go in once each.
#include <catch2/catch.hpp>

#include "report/report_html.hpp"
#include "report/report_page.hpp"

#include <boost/json/object.hpp>

#include <string>

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report page: a string that spells the page's marks or ends its script stays data") {
  const std::string hostile = "</script><script>alert(1)</script><!-- /*ARUN_REPORT_SCRIPT*/ /*ARUN_REPORT_CSS*/";
  const boost::json::object doc{{"output", hostile}};
  const auto page = arun::io::report_html(doc);
  // The page's own two scripts end; nothing of the document opens or ends one.
  CHECK(count_of(page, "</script>") == 2);
  CHECK(count_of(page, "<script") == 2);
  CHECK(page.find("<!--") == std::string::npos);
  // Its marks were filled once each, never inside the data.
  CHECK(count_of(page, std::string(arun::io::report_page_script())) == 1);
  CHECK(count_of(page, std::string(arun::io::report_page_css())) == 1);
  CHECK(page.find("\\u003c/script>\\u003cscript>alert(1)\\u003c/script>\\u003c!-- /*ARUN_REPORT_SCRIPT*/") !=
        std::string::npos);
  CHECK(page.find("/*ARUN_REPORT_DATA*/") == std::string::npos);
}
