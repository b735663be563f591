// Files the nuvec command carries inside itself (tools/CMakeLists.txt,
// nuvec_embed), so that it needs no path fixed at build time.
#pragma once

#include <string_view>

namespace nuvec::tool {

extern const std::string_view kPlotTraceScript;  // tools/plot_trace.py
extern const std::string_view kTimelineHtml;     // tools/timeline.html

}  // namespace nuvec::tool
