// nuvec.save_safetensors: numpy arrays written by the C++ writer
// (io::save_safetensors: every tensor at a 256-byte boundary, so the file
// loads as views of its mapping).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "module.h"
#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"

namespace py = pybind11;

namespace nuvec::python {
namespace {

// numpy's dtype kind and size as a safetensors dtype; bfloat16 and float8
// have no numpy type, so they are written from their bits with `dtypes`.
io::DType dtype_of(const py::dtype& dtype, const std::string& name) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'b' && size == 1) return io::DType::BOOL;
  if (kind == 'u' && size == 1) return io::DType::U8;
  if (kind == 'i' && size == 1) return io::DType::I8;
  if (kind == 'u' && size == 2) return io::DType::U16;
  if (kind == 'i' && size == 2) return io::DType::I16;
  if (kind == 'u' && size == 4) return io::DType::U32;
  if (kind == 'i' && size == 4) return io::DType::I32;
  if (kind == 'u' && size == 8) return io::DType::U64;
  if (kind == 'i' && size == 8) return io::DType::I64;
  if (kind == 'f' && size == 2) return io::DType::F16;
  if (kind == 'f' && size == 4) return io::DType::F32;
  if (kind == 'f' && size == 8) return io::DType::F64;
  if (kind == 'c' && size == 8) return io::DType::C64;
  throw InvalidArgument("save_safetensors: tensor " + name + " has numpy dtype " +
                        py::str(static_cast<const py::handle&>(dtype)).cast<std::string>() +
                        ", which safetensors cannot hold");
}

}  // namespace

void register_save(py::module_& m) {
  m.def(
      "_save_safetensors",
      [](const std::filesystem::path& path, const py::dict& arrays, const std::map<std::string, std::string>& metadata,
         const std::map<std::string, std::string>& dtypes) {
        std::vector<io::TensorView> views;
        std::vector<py::array> keep;  // C-contiguous copies where needed, alive until written
        for (const auto& [key, value] : arrays) {
          const std::string name = py::cast<std::string>(key);
          py::array array = py::array::ensure(value, py::array::c_style);
          if (!array) throw InvalidArgument("save_safetensors: tensor " + name + " is not an array");
          io::TensorView view;
          view.name = name;
          const auto named = dtypes.find(name);
          if (named != dtypes.end()) {
            const auto dtype = io::dtype_from_name(named->second);
            if (!dtype || io::dtype_size(*dtype) != static_cast<std::size_t>(array.itemsize())) {
              throw InvalidArgument("save_safetensors: tensor " + name + ": dtype " + named->second +
                                    " is unknown or not the size of the array's elements");
            }
            view.dtype = *dtype;
          } else {
            view.dtype = dtype_of(array.dtype(), name);
          }
          for (py::ssize_t i = 0; i < array.ndim(); ++i) view.shape.push_back(static_cast<std::uint64_t>(array.shape(i)));
          view.bytes = {static_cast<const std::byte*>(array.data()), static_cast<std::size_t>(array.nbytes())};
          views.push_back(std::move(view));
          keep.push_back(std::move(array));
        }
        py::gil_scoped_release unlocked;
        io::save_safetensors(path, views, metadata);
      },
      py::arg("path"), py::arg("arrays"), py::arg("metadata"), py::arg("dtypes"));
}

}  // namespace nuvec::python
