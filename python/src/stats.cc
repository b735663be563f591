// MemoryStats and Footprint as read-only Python values, and the free
// functions of nuvec/memory.h. The field list is MemoryStats' own
// (for_each_field), so a field added there appears here too.
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "module.h"
#include "nuvec/io/footprint.h"
#include "nuvec/memory.h"
#include "nuvec/memory_stats.h"

namespace py = pybind11;

namespace nuvec::python {
namespace {

py::dict as_dict(const MemoryStats& stats) {
  py::dict d;
  for_each_field(stats, [&](const char* name, const auto& value) { d[name] = value; });
  return d;
}

std::string repr(const MemoryStats& stats) {
  std::string out = "nuvec.MemoryStats(";
  const char* separator = "";
  for_each_field(stats, [&](const char* name, const auto& value) {
    out += separator;
    out += name;
    out += '=';
    out += std::to_string(value);
    separator = ", ";
  });
  return out + ")";
}

}  // namespace

void register_stats(py::module_& m) {
  py::class_<MemoryStats> stats(m, "MemoryStats",
                                "One device allocator's figures at one instant, in bytes "
                                "(system_allocations is a count); docs/memory-stats.md says what each means.");
  MemoryStats sample;
  for_each_field(sample, [&](const char* name, const auto&) {
    const std::string field = name;
    stats.def_property_readonly(name, [field](const MemoryStats& s) {
      std::uint64_t found = 0;
      for_each_field(s, [&](const char* n, const auto& value) {
        if (field == n) found = value;
      });
      return found;
    });
  });
  stats.def("as_dict", &as_dict, "The fields as a dict, in declaration order.")
      .def("__repr__", &repr)
      .def("__eq__", [](const MemoryStats& a, const MemoryStats& b) { return a == b; })
      .def_property_readonly_static("fields", [](py::object) {
        py::list names;
        const MemoryStats none;
        for_each_field(none, [&](const char* name, const auto&) { names.append(name); });
        return py::tuple(names);
      });
  stats.attr("__hash__") = py::none();

  py::class_<io::Footprint>(m, "Footprint", "What loading a checkpoint will add to a device's statistics, in bytes.")
      .def_readonly("mapped", &io::Footprint::mapped)
      .def_readonly("active", &io::Footprint::active)
      .def_property_readonly("peak_with_mapped", &io::Footprint::peak_with_mapped)
      .def("as_dict",
           [](const io::Footprint& f) {
             return py::dict(py::arg("mapped") = f.mapped, py::arg("active") = f.active,
                             py::arg("peak_with_mapped") = f.peak_with_mapped());
           })
      .def("__eq__", [](const io::Footprint& a, const io::Footprint& b) { return a == b; })
      .def("__repr__", [](const io::Footprint& f) {
        return "nuvec.Footprint(mapped=" + std::to_string(f.mapped) + ", active=" + std::to_string(f.active) +
               ", peak_with_mapped=" + std::to_string(f.peak_with_mapped()) + ")";
      });

  m.def("page_size", &page_size, "The system's page size in bytes.");
  m.def("physical_memory", &physical_memory,
        "Physical memory in bytes: the cgroup limit where lower than MemTotal; 0 where unknown.");
  m.def("allocation_size", &allocation_size, py::arg("length"),
        "What a CPU buffer of `length` bytes counts in `active` (None on overflow).");
  m.def("mapping_size", py::overload_cast<std::uint64_t>(&mapping_size), py::arg("length"),
        "What mapping a file of `length` bytes counts in `mapped` (whole pages).");
}

}  // namespace nuvec::python
