// Devices, mapped files and checkpoint tensors (views.h says how their
// Python objects keep what they view alive).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "device_handle.h"
#include "views.h"
#include "module.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/gguf.h"
#include "nuvec/io/npy.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/trace.h"
#include "nuvec/trace_tag.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace nuvec::python {
namespace {

// `with device.tag("optimizer"):` — the Tag lives from __enter__ to __exit__.
struct PyTag {
  DeviceHandle device;
  std::string name;
  std::unique_ptr<Tag> tag;
  std::thread::id thread;
};

// A zero-length buffer still needs an address for Python's buffer protocol.
const std::byte kEmpty[1] = {};

py::buffer_info read_only_bytes(std::span<const std::byte> bytes) {
  const void* data = bytes.empty() ? kEmpty : bytes.data();
  return py::buffer_info(const_cast<void*>(data), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                         {static_cast<py::ssize_t>(bytes.size())}, {py::ssize_t{1}}, /*readonly=*/true);
}

// numpy (and PyTorch's CPU tensors) read the bytes in place, so the loaders
// here take host devices only: on a GPU device a file whose tensors are not
// aligned would be read into device memory. Python makes devices only through
// cpu(), create_cpu() and cuda(), and every CPU device is named "cpu".
void require_host(const Device& device, const char* loader, const fs::path& path) {
  if (device.name() != "cpu") {
    throw InvalidArgument(std::string(loader) + "(" + path.string() + ") on " + std::string(device.name()) +
                          ": numpy arrays need host memory; load on nuvec.cpu() (the default), or onto a GPU "
                          "with nuvec.torch.load_file(path, device=\"cuda\")");
  }
}

std::vector<PyTensorView> wrap(std::vector<io::TensorView> views, const DeviceHandle& device) {
  std::vector<PyTensorView> out;
  out.reserve(views.size());
  for (io::TensorView& view : views) out.push_back({device, std::move(view), {}});
  return out;
}

py::object gguf_value(const io::GgufValue& value);

py::object gguf_array(const io::GgufArray& array) {
  return std::visit(
      [](const auto& elements) {
        py::list out;
        for (const auto& e : elements) {
          if constexpr (std::is_same_v<std::decay_t<decltype(e)>, io::GgufArray>) {
            out.append(gguf_array(e));
          } else {
            out.append(py::cast(static_cast<std::decay_t<decltype(e)>>(e)));
          }
        }
        return py::object(std::move(out));
      },
      array.elements);
}

py::object gguf_value(const io::GgufValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, io::GgufArray>) {
          return gguf_array(v);
        } else {
          return py::cast(v);
        }
      },
      value);
}

}  // namespace

void register_device(py::module_& m) {
  py::class_<PyMappedFile>(m, "MappedFile", py::buffer_protocol(),
                           "A whole file mapped read-only and shared, counted in its device's `mapped` "
                           "until this object and every view of it are gone.")
      .def_buffer([](PyMappedFile& f) { return read_only_bytes(f.file.bytes()); })
      .def_property_readonly("path", [](const PyMappedFile& f) { return f.file.path(); })
      .def_property_readonly("file_size", [](const PyMappedFile& f) { return f.file.file_size(); })
      .def_property_readonly("mapped_bytes", [](const PyMappedFile& f) { return f.file.mapped_bytes(); })
      .def_property_readonly("address",
                             [](const PyMappedFile& f) { return reinterpret_cast<std::uintptr_t>(f.file.bytes().data()); })
      .def("__len__", [](const PyMappedFile& f) { return f.file.file_size(); });

  py::class_<PyTensorView>(m, "TensorView", py::buffer_protocol(),
                           "One checkpoint tensor's bytes, read-only, where the loader put them: "
                           "in a mapping of the file or in one allocator buffer.")
      .def_buffer([](PyTensorView& t) { return read_only_bytes(t.view.bytes); })
      .def_property_readonly("name", [](const PyTensorView& t) { return t.view.name; })
      .def_property_readonly("dtype", [](const PyTensorView& t) { return std::string(io::dtype_name(t.view.dtype)); })
      .def_property_readonly("shape", [](const PyTensorView& t) { return py::tuple(py::cast(t.view.shape)); })
      .def_property_readonly("nbytes", [](const PyTensorView& t) { return t.view.bytes.size(); })
      .def_property_readonly("address",
                             [](const PyTensorView& t) { return reinterpret_cast<std::uintptr_t>(t.view.bytes.data()); })
      .def_property_readonly("ggml_type", [](const PyTensorView& t) { return t.ggml_type; });

  py::class_<Device, DeviceHandle>(m, "Device",
                                   "One allocator over one source of memory: the CPU or a CUDA GPU.")
      .def_property_readonly("name", [](const Device& d) { return std::string(d.name()); })
      .def("memory", &Device::memory, "A consistent snapshot of every statistic.")
      .def("reset_peak", &Device::reset_peak, "peak = active, peak_with_mapped = active + mapped.")
      .def("set_memory_limit", &Device::set_memory_limit, py::arg("bytes"),
           "A hard limit on active + mapped; returns the previous one.")
      .def("set_cache_limit", &Device::set_cache_limit, py::arg("bytes"),
           "The cache is trimmed to at most this; returns the previous limit.")
      .def("set_wired_limit", &Device::set_wired_limit, py::arg("bytes"),
           "Buffers and mappings are kept resident up to this; returns the previous limit.")
      .def("clear_cache", &Device::clear_cache, "Returns every cached block to the system.")
      .def(
          "map_file",
          [](const DeviceHandle& d, const fs::path& path) {
            MappedFile file;
            {
              py::gil_scoped_release unlocked;
              file = d->map_file(path);
            }
            return PyMappedFile{d, std::move(file)};
          },
          py::arg("path"), "Maps the whole file read-only, without copying.")
      .def(
          "_load_safetensors",
          [](const DeviceHandle& d, const fs::path& path) {
            require_host(*d, "load_safetensors", path);
            io::SafetensorsFile file;
            {
              py::gil_scoped_release unlocked;
              file = io::load_safetensors(*d, path);
            }
            py::dict metadata = py::cast(file.metadata());
            return py::make_tuple(wrap(file.tensors(), d), metadata);
          },
          py::arg("path"))
      .def(
          "_load_npy",
          [](const DeviceHandle& d, const fs::path& path, bool transpose_fortran) {
            require_host(*d, "load_npy", path);
            io::TensorView view;
            {
              py::gil_scoped_release unlocked;
              view = io::load_npy(*d, path,
                                  transpose_fortran ? io::FortranOrder::load_transposed : io::FortranOrder::refuse);
            }
            return PyTensorView{d, std::move(view), {}};
          },
          py::arg("path"), py::arg("transpose_fortran") = false)
      .def(
          "_load_gguf",
          [](const DeviceHandle& d, const fs::path& path) {
            require_host(*d, "load_gguf", path);
            io::GgufModel model;
            {
              py::gil_scoped_release unlocked;
              model = io::load_gguf(*d, path);
            }
            std::vector<PyTensorView> tensors = wrap(model.tensors, d);
            for (std::size_t i = 0; i < tensors.size(); ++i) {
              const io::GgmlType& type = model.header.tensors[i].type;
              if (type.quantized()) tensors[i].ggml_type = std::string(type.name);
            }
            py::dict metadata;
            for (const io::GgufKeyValue& kv : model.header.metadata) metadata[py::str(kv.key)] = gguf_value(kv.value);
            return py::make_tuple(std::move(tensors), metadata);
          },
          py::arg("path"))
      .def("start_trace", &Device::start_trace, py::arg("capacity") = Device::kDefaultTraceEvents,
           "Records every event from now on, in a ring of `capacity` (docs/trace-format.md).")
      .def("stop_trace", &Device::stop_trace)
      .def("mark", &Device::mark, py::arg("phase"), "A phase marker in the trace; nothing when it is off.")
      .def(
          "tag", [](const DeviceHandle& d, std::string name) { return PyTag{d, std::move(name), nullptr, {}}; },
          py::arg("name"),
          "A context manager: every event this device traces on this thread inside `with device.tag(name):` "
          "carries the tag (the innermost one, where they nest).")
      .def(
          "save_trace",
          [](const Device& d, const fs::path& path) {
            const std::optional<Trace> trace = d.trace();
            if (!trace) {
              throw InvalidArgument("cannot save the trace of " + std::string(d.name()) + " to " + path.string() +
                                    ": the trace is off (start it with start_trace(), or set NUVEC_TRACE=path)");
            }
            write_trace(path, *trace);
            return trace->events.size();
          },
          py::arg("path"), "Writes what the trace recorded so far as JSON Lines; returns the number of events.")
      .def("__repr__", [](const Device& d) { return "nuvec.Device(" + std::string(d.name()) + ")"; });

  // nuvec::Tag as a context manager; it must end on the thread that entered it.
  py::class_<PyTag>(m, "Tag")
      .def("__enter__",
           [](PyTag& t) -> PyTag& {
             if (t.tag) throw InvalidArgument("tag '" + t.name + "' is already entered; make a new one for each with");
             t.tag = std::make_unique<Tag>(*t.device, t.name);
             t.thread = std::this_thread::get_id();
             return t;
           })
      .def("__exit__",
           [](PyTag& t, const py::object&, const py::object&, const py::object&) {
             if (!t.tag) return false;
             if (t.thread != std::this_thread::get_id()) {
               throw InvalidArgument("tag '" + t.name + "' must end on the thread that entered it");
             }
             t.tag.reset();
             return false;
           })
      .def_property_readonly("name", [](const PyTag& t) { return t.name; })
      .def("__repr__", [](const PyTag& t) { return "nuvec.Tag(" + t.name + ")"; });
  m.def(
      "current_tag", [](const DeviceHandle& d) { return std::string(Tag::current(*d)); }, py::arg("device"),
      "The innermost tag open on this thread for `device`; '' when none.");

  m.def("cpu", [] { return process_wide(Device::cpu()); }, "The process-wide CPU device.");
  m.def("create_cpu", [] { return DeviceHandle(Device::create_cpu()); },
        "A new CPU device with its own cache, limits and statistics.");
  m.def("cuda", [](int ordinal) { return process_wide(Device::cuda(ordinal)); }, py::arg("ordinal") = 0,
        "The process-wide device of CUDA GPU `ordinal` (InvalidArgument when there is none).");
  m.def("cuda_device_count", &cuda_device_count, "CUDA GPUs this process can use (0 without CUDA).");
  m.def(
      "footprint",
      [](const std::vector<fs::path>& paths) {
        py::gil_scoped_release unlocked;
        return io::footprint(std::span<const fs::path>(paths));
      },
      py::arg("paths"), "What loading these safetensors checkpoints will add, from their headers alone.");
}

}  // namespace nuvec::python
