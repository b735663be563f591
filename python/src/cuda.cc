// CUDA from Python: checkpoint tensors uploaded onto a GPU (as objects with
// __cuda_array_interface__, which PyTorch and CuPy wrap without a copy), and
// the figures of PyTorch's allocator plugin. In a build with CUDA the plugin
// itself (src/cuda/torch_allocator.cc) is compiled into this module, so
// torch.cuda.memory.CUDAPluggableAllocator can load it from the module's own
// file and PyTorch's allocations land on the same nuvec.cuda(i) devices
// Python reads.
#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "device_handle.h"
#include "module.h"
#include "views.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/error.h"
#include "nuvec/io/tensor.h"

#ifdef NUVEC_PYTHON_TORCH_ALLOCATOR
extern "C" {
int nuvec_peak_held(int device, std::uint64_t* out);
int nuvec_committed(int device, std::uint64_t* out);
int nuvec_call_times(int device, std::uint64_t* out);
const char* nuvec_last_error(void);
}
#endif

namespace py = pybind11;

namespace nuvec::python {
namespace {

// One uploaded tensor. The report is shared by the tensors of one upload.
struct PyDeviceTensor {
  DeviceHandle device;  // first: destroyed after the tensor's buffer
  cuda::DeviceTensor tensor;
};

py::dict cuda_array_interface(const PyDeviceTensor& t) {
  // Bytes, one dimension: the caller reinterprets them (PyTorch: .view(dtype)),
  // since the interface's typestr has no bfloat16 or float8.
  const std::size_t bytes = t.tensor.buffer.size();
  py::dict d;
  d["shape"] = py::make_tuple(bytes);
  d["typestr"] = "|u1";
  d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(t.tensor.buffer.data()), false);
  d["version"] = 3;
  // upload() returns after its copies have finished: no stream to wait on.
  d["stream"] = py::none();
  return d;
}

py::dict report_dict(const cuda::UploadReport& r) {
  py::dict d;
  d["bytes"] = r.bytes;
  d["direct_bytes"] = r.direct_bytes;
  d["pinned_bytes"] = r.pinned_bytes;
  d["read_bytes"] = r.read_bytes;
  d["staging_bytes"] = r.staging_bytes;
  d["slot_bytes"] = r.slot_bytes;
  d["pipelines"] = r.pipelines;
  d["copies"] = r.copies;
  d["plan_seconds"] = r.plan_seconds;
  d["setup_seconds"] = r.setup_seconds;
  d["staging_seconds"] = r.staging_seconds;
  d["staging_faulted_seconds"] = r.staging_faulted_seconds;
  d["staging_lock_seconds"] = r.staging_lock_seconds;
  d["buffers_seconds"] = r.buffers_seconds;
  d["seconds"] = r.seconds;
  return d;
}

#ifdef NUVEC_PYTHON_TORCH_ALLOCATOR
void check(int status, const char* what, int device) {
  if (status != 0) throw InvalidArgument(std::string(what) + " of device " + std::to_string(device) + ": " + nuvec_last_error());
}
#endif

}  // namespace

void register_cuda(py::module_& m) {
  py::class_<PyDeviceTensor>(m, "DeviceTensor", "One tensor uploaded onto a GPU, in a buffer of its nuvec device.")
      .def_property_readonly("name", [](const PyDeviceTensor& t) { return t.tensor.name; })
      .def_property_readonly("dtype", [](const PyDeviceTensor& t) { return std::string(io::dtype_name(t.tensor.dtype)); })
      .def_property_readonly("shape", [](const PyDeviceTensor& t) { return py::tuple(py::cast(t.tensor.shape)); })
      .def_property_readonly("nbytes", [](const PyDeviceTensor& t) { return t.tensor.buffer.size(); })
      .def_property_readonly("data_ptr",
                             [](const PyDeviceTensor& t) { return reinterpret_cast<std::uintptr_t>(t.tensor.buffer.data()); })
      .def_property_readonly("__cuda_array_interface__", &cuda_array_interface);

  // Host views as the loaders made them: their storage says where the bytes
  // live, so an upload reads a mapped checkpoint from its file.
  m.def(
      "_upload",
      [](const DeviceHandle& gpu, const py::list& views, std::size_t staging_bytes) {
        std::vector<io::TensorView> host;
        host.reserve(views.size());
        for (const py::handle& v : views) host.push_back(v.cast<const PyTensorView&>().view);
        cuda::UploadOptions options;
        if (staging_bytes != 0) options.staging_bytes = staging_bytes;
        cuda::DeviceCheckpoint checkpoint;
        {
          py::gil_scoped_release unlocked;
          checkpoint = cuda::upload(*gpu, host, options);
        }
        py::list tensors;
        for (cuda::DeviceTensor& t : checkpoint.tensors()) tensors.append(PyDeviceTensor{gpu, std::move(t)});
        return py::make_tuple(tensors, report_dict(checkpoint.report()));
      },
      py::arg("device"), py::arg("views"), py::arg("staging_bytes") = 0);

#ifdef NUVEC_PYTHON_TORCH_ALLOCATOR
  m.attr("_has_torch_allocator") = true;
  m.def("_torch_peak_held", [](int device) {
    std::uint64_t out = 0;
    check(nuvec_peak_held(device, &out), "peak_held", device);
    return out;
  });
  m.def("_torch_committed", [](int device) {
    std::uint64_t out[2] = {};
    check(nuvec_committed(device, out), "committed memory", device);
    return py::make_tuple(out[0], out[1]);
  });
  m.def("_torch_call_times", [](int device) {
    std::uint64_t out[4] = {};
    check(nuvec_call_times(device, out), "call times", device);
    return py::make_tuple(out[0], out[1], out[2], out[3]);
  });
#else
  m.attr("_has_torch_allocator") = false;
#endif
}

}  // namespace nuvec::python
