// nuvec built without the CUDA toolkit: no CUDA devices, and a clear error
// for anything that needs one.
#include <fmt/format.h>

#include "cuda/cuda_backend.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/error.h"

namespace nuvec::cuda {

namespace {

[[noreturn]] void unavailable(const char* what) {
  throw InvalidArgument(fmt::format(
      "{}: nuvec was built without CUDA (the CUDA toolkit was not found when it was configured); install the "
      "toolkit and configure again to use GPUs",
      what));
}

}  // namespace

int device_count(std::string* why) {
  if (why != nullptr) *why = "nuvec was built without CUDA";
  return 0;
}

std::unique_ptr<detail::Backend> make_backend(int ordinal, const CudaBackendOptions&) {
  unavailable(fmt::format("CUDA device {}", ordinal).c_str());
}
std::unique_ptr<detail::Backend> make_backend(int ordinal) { return make_backend(ordinal, {}); }

DeviceInfo device_info(int) { unavailable("cuda::device_info"); }
void copy_to_host(std::span<std::byte>, const Buffer&, std::size_t) { unavailable("cuda::copy_to_host"); }
void copy_from_host(Buffer&, std::span<const std::byte>, std::size_t) { unavailable("cuda::copy_from_host"); }
DeviceCheckpoint upload(Device&, std::span<const io::TensorView>, const UploadOptions&) {
  unavailable("cuda::upload");
}
FileUpload read_file(Device&, int, std::size_t, std::span<const FileRead>, const UploadOptions&) {
  unavailable("cuda::read_file");
}

}  // namespace nuvec::cuda
