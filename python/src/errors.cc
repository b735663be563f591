// nuvec's exceptions as Python exceptions of matching kinds, with the same
// messages: each derives from nuvec.Error and from the built-in exception a
// Python caller would catch for that kind of failure, so `except MemoryError`
// and `except OSError` work as they do for Python's own errors.
#include <cerrno>
#include <exception>

#include <pybind11/pybind11.h>

#include "module.h"
#include "nuvec/error.h"
#include "nuvec/memory_stats.h"

namespace py = pybind11;

namespace nuvec::python {
namespace {

// Made once at import; the module holds references to them as attributes.
PyObject* error_type = nullptr;
PyObject* out_of_memory_type = nullptr;
PyObject* io_error_type = nullptr;
PyObject* format_error_type = nullptr;
PyObject* invalid_argument_type = nullptr;
PyObject* read_only_type = nullptr;

PyObject* new_type(py::module_& m, const char* name, PyObject* builtin, const char* doc) {
  const py::tuple bases = builtin ? py::tuple(py::make_tuple(py::handle(error_type), py::handle(builtin)))
                                  : py::tuple(py::make_tuple(py::handle(PyExc_Exception)));
  PyObject* type = PyErr_NewExceptionWithDoc((std::string("nuvec.") + name).c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module keeps the new reference
  return type;
}

// Raises `type(message)` with extra attributes set on the instance.
template <class SetAttributes>
void raise(PyObject* type, const char* message, SetAttributes&& set_attributes) {
  py::object exception = py::reinterpret_steal<py::object>(PyObject_CallFunction(type, "s", message));
  if (!exception) throw py::error_already_set();
  set_attributes(exception);
  PyErr_SetObject(type, exception.ptr());
}

py::dict stats_dict(const MemoryStats& stats) {
  py::dict d;
  for_each_field(stats, [&](const char* name, const auto& value) { d[name] = value; });
  return d;
}

void translate(std::exception_ptr pending) {
  try {
    std::rethrow_exception(pending);
  } catch (const OutOfMemory& e) {
    raise(out_of_memory_type, e.what(), [&](py::object& x) {
      x.attr("requested") = e.requested();
      x.attr("stats") = stats_dict(e.stats());
    });
  } catch (const IoError& e) {
    // OSError's errno, set after construction, and the file as `path`: str()
    // stays nuvec's message (OSError(errno, ...) or a `filename` would make
    // str() "[Errno N] ...: 'file'" instead).
    raise(io_error_type, e.what(), [&](py::object& x) {
      x.attr("errno") = e.error_code();
      x.attr("path") = e.path().empty() ? py::object(py::none()) : py::object(py::str(e.path().string()));
    });
  } catch (const FormatError& e) {
    raise(format_error_type, e.what(), [&](py::object& x) {
      x.attr("file") = e.file().string();
      x.attr("offset") = e.offset();
    });
  } catch (const InvalidArgument& e) {
    raise(invalid_argument_type, e.what(), [](py::object&) {});
  } catch (const ReadOnly& e) {
    raise(read_only_type, e.what(), [](py::object&) {});
  }
  // Anything else falls through to pybind11's own translators.
}

}  // namespace

void register_errors(py::module_& m) {
  error_type = new_type(m, "Error", nullptr, "Base of every exception nuvec raises.");
  out_of_memory_type =
      new_type(m, "OutOfMemory", PyExc_MemoryError,
               "An allocation or mapping the memory limit (or the system) refused; nothing changed. "
               "Attributes: requested (bytes it would have counted), stats (the MemoryStats fields at refusal).");
  io_error_type = new_type(m, "IoError", PyExc_OSError,
                           "A system call on a file or on memory failed. Attributes: errno, path (None for calls on memory).");
  format_error_type = new_type(m, "FormatError", PyExc_ValueError,
                               "A file whose contents break its format. Attributes: file, offset (bytes).");
  invalid_argument_type =
      new_type(m, "InvalidArgument", PyExc_ValueError, "A value the caller passed that cannot be honoured.");
  read_only_type = new_type(m, "ReadOnly", PyExc_PermissionError, "A write to read-only memory (a mapped file).");
  py::register_exception_translator(translate);
}

}  // namespace nuvec::python
