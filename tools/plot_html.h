// The interactive timeline of a trace: one self-contained HTML page
// (tools/timeline.html with the trace's data inside), for `nuvec plot --html`.
#pragma once

#include <string>
#include <string_view>

#include "nuvec/trace.h"

namespace nuvec::tool {

std::string timeline_html(const Trace& trace, std::string_view title);

}  // namespace nuvec::tool
