// nuvec._nuvec: the C++ side of the Python package (python/nuvec). The
// package's __init__.py re-exports it and adds the numpy and PyTorch layers.
#include <pybind11/pybind11.h>

#include "module.h"
#include "nuvec/version.h"

PYBIND11_MODULE(_nuvec, m) {
  m.doc() = "nuvec: a device allocator with exact memory statistics and zero-copy checkpoint loading";
  m.attr("__version__") = nuvec::version();
  nuvec::python::register_errors(m);
  nuvec::python::register_stats(m);
  nuvec::python::register_device(m);
  nuvec::python::register_save(m);
  nuvec::python::register_cuda(m);
}
