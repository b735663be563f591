// The pieces of the _nuvec extension module, each defined in its own file and
// registered by module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace nuvec::python {

// nuvec.Error and its subclasses, and the translation of nuvec's C++
// exceptions into them (errors.cc).
void register_errors(pybind11::module_& m);
// MemoryStats, Footprint and the free functions of nuvec/memory.h (stats.cc).
void register_stats(pybind11::module_& m);
// Device, MappedFile, TensorView and the loaders (device.cc).
void register_device(pybind11::module_& m);
// save_safetensors from numpy arrays (save.cc).
void register_save(pybind11::module_& m);
// CUDA: device tensors uploaded from host views, and PyTorch's allocator (cuda.cc).
void register_cuda(pybind11::module_& m);

}  // namespace nuvec::python
