// The page's data: per event its time, seq and (with statistics) active +
// mapped and cache; each buffer and mapping as [first event, event that
// ended it (n: still live), size, tag, stream, mapped file (-1: a buffer),
// bytes asked for]; marks and refusals by event. The page computes the
// stacked bands and the peak from these (tools/timeline.html).
#include "plot_html.h"

#include <map>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "embedded.h"

namespace nuvec::tool {
namespace {

std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The index of `name` in `names`, added where new.
std::size_t intern(std::vector<std::string>& names, std::unordered_map<std::string, std::size_t>& index,
                   const std::string& name) {
  const auto [it, added] = index.try_emplace(name, names.size());
  if (added) names.push_back(name);
  return it->second;
}

void append_names(std::string& out, const std::vector<std::string>& names) {
  out += '[';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i != 0) out += ',';
    out += json_string(names[i]);
  }
  out += ']';
}

}  // namespace

std::string timeline_html(const Trace& trace, std::string_view title) {
  const std::size_t n = trace.events.size();
  bool has_stats = n != 0;
  for (const TraceEvent& e : trace.events) has_stats = has_stats && e.stats.has_value();

  struct Block {
    std::size_t start, end;
    std::uint64_t size, requested;
    std::size_t tag;
    std::int64_t stream;
    long long label;  // mapped file: index into labels; -1 for a buffer
  };
  std::vector<Block> blocks;
  std::map<std::pair<bool, std::uint64_t>, std::size_t> open;  // (mapping?, id) -> block
  std::vector<std::string> tags, labels;
  std::unordered_map<std::string, std::size_t> tag_index, label_index;
  std::string marks = "[", refusals = "[";

  for (std::size_t i = 0; i < n; ++i) {
    const TraceEvent& e = trace.events[i];
    switch (e.kind) {
      case TraceEventKind::allocate:
      case TraceEventKind::map: {
        const bool mapping = e.kind == TraceEventKind::map;
        const long long label = mapping ? static_cast<long long>(intern(labels, label_index, e.label)) : -1;
        open[{mapping, e.id}] = blocks.size();
        blocks.push_back({i, n, e.size, mapping ? e.size : e.requested, intern(tags, tag_index, e.tag), e.stream,
                          label});
        break;
      }
      case TraceEventKind::free:
      case TraceEventKind::unmap: {
        const auto it = open.find({e.kind == TraceEventKind::unmap, e.id});
        if (it == open.end()) break;  // made before the trace's first event
        blocks[it->second].end = i;
        open.erase(it);
        break;
      }
      case TraceEventKind::mark:
        marks += fmt::format("{}[{},{}]", marks.size() > 1 ? "," : "", i, json_string(e.label));
        break;
      case TraceEventKind::refuse:
        refusals += fmt::format("{}[{},{},{}]", refusals.size() > 1 ? "," : "", i, e.requested, json_string(e.label));
        break;
      default:
        break;
    }
  }
  if (tags.empty()) tags.emplace_back();
  marks += ']';
  refusals += ']';

  std::string data;
  data.reserve(64 * n + 48 * blocks.size() + 1024);
  data += fmt::format(R"({{"title":{},"device":{},"source":{},"dropped":{},)", json_string(title),
                      json_string(trace.header.device), json_string(trace.header.source), trace.header.dropped);
  const auto series = [&](const char* name, auto value) {
    data += fmt::format("\"{}\":[", name);
    for (std::size_t i = 0; i < n; ++i) {
      if (i != 0) data += ',';
      data += fmt::format("{}", value(trace.events[i]));
    }
    data += "],";
  };
  series("t", [](const TraceEvent& e) { return e.t_ns; });
  series("seq", [](const TraceEvent& e) { return e.seq; });
  if (has_stats) {
    series("total", [](const TraceEvent& e) { return e.stats->active + e.stats->mapped; });
    series("cache", [](const TraceEvent& e) { return e.stats->cache; });
  } else {
    data += "\"total\":null,\"cache\":null,";
  }
  data += "\"tags\":";
  append_names(data, tags);
  data += ",\"labels\":";
  append_names(data, labels);
  data += ",\"blocks\":[";
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Block& k = blocks[b];
    data += fmt::format("{}{},{},{},{},{},{},{}", b != 0 ? "," : "", k.start, k.end, k.size, k.tag, k.stream, k.label,
                        k.requested);
  }
  data += fmt::format("],\"marks\":{},\"refusals\":{}}}", marks, refusals);

  // Inside a <script> element "</script" or "<!--" would end or change it:
  // '<' appears only inside JSON strings, where \u003c reads the same.
  std::string safe;
  safe.reserve(data.size());
  for (const char c : data) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }

  std::string page(kTimelineHtml);
  const std::string_view placeholder = "/*NUVEC_TRACE_DATA*/";
  const std::size_t at = page.find(placeholder);
  // The page is built into the binary (tools/timeline.html): a page without
  // its placeholder is a build mistake, said as one rather than as
  // std::string's out_of_range.
  if (at == std::string::npos) throw std::logic_error("tools/timeline.html has no /*NUVEC_TRACE_DATA*/ placeholder");
  page.replace(at, placeholder.size(), safe);
  return page;
}

}  // namespace nuvec::tool
