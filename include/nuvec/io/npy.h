// NumPy .npy files (format versions 1.0, 2.0 and 3.0), read as hostile input.
//
// A file is a 6-byte magic "\x93NUMPY", a version byte pair, a little-endian
// header length (2 bytes in 1.0, 4 in 2.0 and 3.0), and a header: the repr of
// a Python dict, {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), },
// padded with spaces and a final '\n'. The data follows, exactly
// prod(shape) * itemsize bytes: nuvec refuses trailing bytes as well as
// missing ones.
//
// dtypes: bool ('|b1'), int8..int64 and uint8..uint64 ('i1'..'i8', 'u1'..'u8'),
// float16/32/64 ('f2', 'f4', 'f8') and complex64 ('c8', as DType::C64), in
// either byte order. Structured, string, object and other dtypes are refused.
//
// Loading maps the file (no copy) when the data is in native byte order and
// its offset is a multiple of the element size (numpy.save pads headers to 64
// bytes, so its files always are); otherwise the data is read once into one
// device buffer, and big-endian data is converted to native order there.
//
// Fortran order: refused by default (FormatError), since loading it as a
// C-order array would silently transpose it. load_npy(..., FortranOrder::
// load_transposed) opts in: the bytes are then exactly those of the C-order
// transpose, so the view's shape is the written shape reversed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "nuvec/io/footprint.h"
#include "nuvec/io/tensor.h"

namespace nuvec {
class Device;
}

namespace nuvec::io {

// What an .npy header says, checked against the file's size.
struct NpyHeader {
  std::uint8_t major_version = 0;  // 1, 2 or 3
  std::uint8_t minor_version = 0;  // 0
  DType dtype = DType::U8;
  bool big_endian = false;     // the data's byte order ('>'); false for one-byte types
  bool fortran_order = false;  // column-major data
  std::vector<std::uint64_t> shape;  // as written (for Fortran order too)
  std::uint64_t data_offset = 0;     // where the data starts: preamble + header
  std::uint64_t data_bytes = 0;      // prod(shape) * itemsize == file size - data_offset
};

// The longest header nuvec reads (numpy's own reader stops at 10,000 bytes
// unless told otherwise); a longer one is a FormatError, so a hostile header
// length never sizes a read.
inline constexpr std::uint64_t kNpyMaxHeaderLength = std::uint64_t{1} << 20;

// The most dimensions a shape may have: numpy's own limit (NPY_MAXDIMS, 64
// since numpy 2.0), past which numpy.load refuses the file; so does nuvec.
inline constexpr std::size_t kNpyMaxDimensions = 64;

// How many leading bytes of the file hold the preamble and the header (the
// data offset). Looks only at the first 12 bytes of `prefix`; FormatError if
// they are not an npy preamble or the header would pass the end of a file of
// `file_size` bytes or kNpyMaxHeaderLength.
std::uint64_t npy_header_size(std::span<const std::byte> prefix, std::uint64_t file_size,
                              const std::filesystem::path& name);

// Parses the preamble and the header. `prefix` is the start of the file and
// must hold at least npy_header_size() bytes (the whole file will do);
// `file_size` is the whole file's size; `name` only labels errors. Pure: no
// I/O, no device. FormatError (file, byte offset, reason) for anything that
// is not a well-formed npy header of a supported dtype whose data exactly
// fills the rest of the file; InvalidArgument if `prefix` is shorter than the
// header while the file is not.
NpyHeader parse_npy_header(std::span<const std::byte> prefix, std::uint64_t file_size,
                           const std::filesystem::path& name);

// Reads and parses the header of the file at `path` (its first bytes only):
// parse_npy_header's errors, and IoError if it cannot be read (a FIFO or a
// directory is refused at once).
NpyHeader read_npy_header(const std::filesystem::path& path);

// What load_npy would add to a device's statistics, from the header alone
// (the placement rule every loader shares: the file's mapping_size when the
// data is native and aligned, else the allocation_size of its buffer; zero
// for an array of no bytes).
Footprint npy_footprint(const std::filesystem::path& path);

// What load_npy does with a Fortran-order (column-major) array.
enum class FortranOrder {
  refuse,           // FormatError naming the file (the default)
  load_transposed,  // the C-order transpose: the same bytes, shape reversed
};

// Loads one array as a tensor named after the file's stem. Maps the file
// (counted in `mapped`) where it can, else reads it into one buffer (counted
// in `active`); an array of no bytes takes neither. See the top of this file. FormatError for a malformed file
// (and for a file that changes size while loading), IoError if it cannot be
// read, OutOfMemory past the memory limit; a refusal changes no statistic.
TensorView load_npy(Device& device, const std::filesystem::path& path,
                    FortranOrder fortran_order = FortranOrder::refuse);

}  // namespace nuvec::io
