// Python's handles on nuvec memory. Each keeps what it views alive (the
// mapping or buffer, and the device it is counted on), so a device's
// statistics fall only when the last Python view of it goes.
#pragma once

#include <string>

#include "device_handle.h"
#include "nuvec/mapped_file.h"
#include "nuvec/io/tensor.h"

namespace nuvec::python {

// A whole file mapped read-only: a buffer (memoryview, numpy.frombuffer)
// that refuses writes.
// The device is declared first so that it is destroyed last, after what it counts.
struct PyMappedFile {
  DeviceHandle device;
  MappedFile file;
};

// One tensor of a loaded checkpoint, in host memory: its bytes as a
// read-only buffer, with what numpy or PyTorch need to give them a dtype and
// shape.
struct PyTensorView {
  DeviceHandle device;  // first: destroyed after the view's storage
  io::TensorView view;
  std::string ggml_type;  // GGUF's quantized block type ("Q4_K"), else empty
};

}  // namespace nuvec::python
