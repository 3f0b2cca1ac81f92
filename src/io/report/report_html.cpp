#include "report/report_html.hpp"

#include "files/json_text.hpp"
#include "report/report_page.hpp"

#include <initializer_list>
#include <string_view>

namespace arun::io {
namespace {

// The page's marks, each filled in once. Only the template is searched for them, never what
// goes in: a step's output that spells a mark stays text.
struct mark {
  std::string_view name, text;
};

std::string fill_marks(std::string_view page, std::initializer_list<mark> marks) {
  std::string out;
  while (!page.empty()) {
    std::size_t first = std::string_view::npos;
    const mark* found = nullptr;
    for (const auto& m : marks)
      if (const auto at = page.find(m.name); at < first) {
        first = at;
        found = &m;
      }
    if (!found) break;
    out.append(page.substr(0, first));
    out.append(found->text);
    page.remove_prefix(first + found->name.size());
  }
  out.append(page);
  return out;
}

}  // namespace

std::string report_html(const boost::json::object& report) {
  // Inside <script type="application/json"> the text ends at the first "</script": every '<'
  // of the document (only ever inside its strings) is written as the JSON escape \u003c, so
  // no step output, prompt or reply can end the data early or open a tag of its own.
  std::string data;
  for (const char c : to_json_text(report)) {
    if (c == '<')
      data += "\\u003c";
    else
      data += c;
  }
  return fill_marks(report_page_html(), {{"/*ARUN_REPORT_CSS*/", report_page_css()},
                                         {"/*ARUN_REPORT_SCRIPT*/", report_page_script()},
                                         {"/*ARUN_REPORT_DATA*/", data}});
}

}  // namespace arun::io
