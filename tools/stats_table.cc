#include "stats_table.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/core.h>

#include "nuvec/memory.h"

namespace nuvec::tool {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::size_t>::max();

bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string exact_value(std::string_view field, std::uint64_t value) {
  if (is_limit(field) && value == kUnlimited) return "unlimited";
  return fmt::format("{}", value);
}

// Renders rows with the first column left-aligned and the others right-aligned.
std::string render(const std::vector<std::vector<std::string>>& rows, std::string_view indent) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line{indent};
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i == 0) {
        line += fmt::format("{:<{}}", row[i], width[i]);
      } else {
        line += fmt::format("  {:>{}}", row[i], width[i]);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

std::vector<Field> fields_of(const MemoryStats& stats) {
  std::vector<Field> fields;
  for_each_field(stats, [&](std::string_view name, std::uint64_t value) {
    fields.push_back({name, value});
  });
  return fields;
}

bool is_count(std::string_view field) { return field == "system_allocations"; }

bool is_limit(std::string_view field) { return field.ends_with("_limit"); }

std::string format_value(std::string_view field, std::uint64_t value) {
  if (is_limit(field) && value == kUnlimited) return "unlimited";
  if (is_count(field)) return fmt::format("{}", value);
  return format_bytes(value);
}

std::string format_change(std::string_view field, std::uint64_t before, std::uint64_t after) {
  if (before == after) return "=";
  if (is_limit(field)) {
    return fmt::format("{} → {}", format_value(field, before), format_value(field, after));
  }
  const char sign = after > before ? '+' : '-';
  const std::uint64_t delta = after > before ? after - before : before - after;
  if (is_count(field)) return fmt::format("{}{}", sign, delta);
  return fmt::format("{}{}", sign, format_bytes(delta));
}

std::string stats_table(const MemoryStats& stats) {
  std::vector<std::vector<std::string>> rows = {{"field", "bytes", "human"}};
  for (const Field& f : fields_of(stats)) {
    rows.push_back({std::string{f.name}, exact_value(f.name, f.value),
                    is_count(f.name) ? "(count)" : format_value(f.name, f.value)});
  }
  return render(rows, "  ");
}

std::string changes_table(const MemoryStats& before, const MemoryStats& after,
                          std::span<const std::string_view> always) {
  const std::vector<Field> old_fields = fields_of(before);
  const std::vector<Field> new_fields = fields_of(after);
  std::vector<std::vector<std::string>> rows = {{"field", "before", "after", "change"}};
  for (std::size_t i = 0; i < new_fields.size(); ++i) {
    const std::string_view name = new_fields[i].name;
    const std::uint64_t was = old_fields[i].value;
    const std::uint64_t now = new_fields[i].value;
    if (was == now && !contains(always, name)) continue;
    rows.push_back({std::string{name}, format_value(name, was), format_value(name, now),
                    // A limit's change is already in its before and after columns.
                    is_limit(name) && was != now ? "" : format_change(name, was, now)});
  }
  return render(rows, "    ");
}

std::string summarize_changes(const MemoryStats& before, const MemoryStats& after,
                              std::span<const std::string_view> always) {
  const std::vector<Field> old_fields = fields_of(before);
  const std::vector<Field> new_fields = fields_of(after);
  std::string out;
  auto append = [&](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  for (std::size_t i = 0; i < new_fields.size(); ++i) {
    const std::string_view name = new_fields[i].name;
    const std::uint64_t was = old_fields[i].value;
    const std::uint64_t now = new_fields[i].value;
    if (was != now && name != "active_with_mapped") {
      append(fmt::format("{} {}", name, format_change(name, was, now)));
    } else if (was == now && contains(always, name)) {
      append(fmt::format("{} unchanged ({})", name, format_value(name, now)));
    }
  }
  return out.empty() ? "no change" : out;
}

}  // namespace nuvec::tool
