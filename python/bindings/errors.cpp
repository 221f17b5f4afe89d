// Each C++ error type maps to one Python exception (python/headrace/errors.py re-exports), which also
// derives from the built-in that says what kind of error it is, so `except FileNotFoundError` or
// `except ValueError` catch headrace's too. The source location C++ appends to a message ("[format/
// container.cpp:42]") moves to the exception's `source_location` attribute: messages are for users.
#include <cerrno>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>
#include <utility>

#include "headrace/error.hpp"

#include "bindings.hpp"

namespace nb = nanobind;

namespace headrace::python {
namespace {

// The classes, made once at import; strong references for the life of the process.
struct Classes {
  PyObject* error;
  PyObject* usage;
  PyObject* unknown_name;
  PyObject* system;
  PyObject* file_open;
  PyObject* missing_file;
  PyObject* file_access;
  PyObject* not_a_file;
  PyObject* unavailable;
  PyObject* cuda;
  PyObject* gpu_out_of_memory;
  PyObject* bad_data;
  PyObject* truncated_file;
  PyObject* bad_magic;
  PyObject* unsupported_version;
  PyObject* corrupt_index;
  PyObject* chunk_out_of_bounds;
  PyObject* checksum_mismatch;
  PyObject* empty_field;
  PyObject* codec;
};
Classes classes;

PyObject* make_class(nb::module_& m, const char* name, const char* doc, std::initializer_list<PyObject*> bases) {
  nb::tuple base_tuple = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(bases.size())));
  Py_ssize_t i = 0;
  for (PyObject* base : bases) PyTuple_SET_ITEM(base_tuple.ptr(), i++, nb::borrow(base).release().ptr());
  // The module's own name ("headrace._ext" when imported from the package, "_ext" where nanobind's
  // stubgen imports it): stubgen writes out only the classes that name it as their module.
  const std::string qualified = std::string(nb::borrow<nb::str>(m.attr("__name__")).c_str()) + "." + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), nullptr);
  if (type == nullptr) throw nb::python_error();
  m.attr(name) = nb::borrow(type);
  return type;
}

// "message [layer/file.cpp:42]" -> ("message", "layer/file.cpp:42"); no tag: (message, "").
std::pair<std::string, std::string> split_source_location(const std::string& message) {
  if (message.empty() || message.back() != ']') return {message, ""};
  const auto open = message.rfind(" [");
  if (open == std::string::npos) return {message, ""};
  std::string tag = message.substr(open + 2, message.size() - open - 3);
  const bool source = tag.find(':') != std::string::npos &&
                      (tag.find(".cpp:") != std::string::npos || tag.find(".hpp:") != std::string::npos ||
                       tag.find(".cu:") != std::string::npos);
  if (!source) return {message, ""};
  return {message.substr(0, open), std::move(tag)};
}

void raise(PyObject* type, const char* what, int error_number = 0) {
  auto [text, where] = split_source_location(what);
  nb::object value = nb::steal(PyObject_CallOneArg(type, nb::str(text.c_str(), text.size()).ptr()));
  if (!value.is_valid()) return;  // the constructor raised: that error stands
  nb::setattr(value, "source_location", where.empty() ? nb::none() : nb::object(nb::str(where.c_str(), where.size())));
  if (error_number != 0) {
    nb::setattr(value, "errno", nb::int_(error_number));
    nb::setattr(value, "strerror", nb::str(std::strerror(error_number)));
  }
  PyErr_SetObject(type, value.ptr());
}

PyObject* file_class(int error_number) {
  switch (error_number) {
    case ENOENT: case ENOTDIR: return classes.missing_file;
    case EACCES: case EPERM: return classes.file_access;
    case EISDIR: return classes.not_a_file;
    default: return classes.file_open;
  }
}

void translate(const std::exception_ptr& thrown, void*) {
  try {
    std::rethrow_exception(thrown);
  } catch (const UnknownNameError& e) {
    raise(classes.unknown_name, e.what());
  } catch (const UsageError& e) {
    raise(classes.usage, e.what());
  } catch (const FileNotFoundError& e) {
    raise(file_class(e.error_number()), e.what(), e.error_number());
  } catch (const SystemError& e) {
    raise(classes.system, e.what(), e.error_number());
  } catch (const UnavailableError& e) {
    raise(classes.unavailable, e.what());
  } catch (const GpuOutOfMemoryError& e) {
    raise(classes.gpu_out_of_memory, e.what());
  } catch (const CudaError& e) {
    raise(classes.cuda, e.what());
  } catch (const TruncatedFileError& e) {
    raise(classes.truncated_file, e.what());
  } catch (const BadMagicError& e) {
    raise(classes.bad_magic, e.what());
  } catch (const UnsupportedVersionError& e) {
    raise(classes.unsupported_version, e.what());
  } catch (const CorruptIndexError& e) {
    raise(classes.corrupt_index, e.what());
  } catch (const ChunkOutOfBoundsError& e) {
    raise(classes.chunk_out_of_bounds, e.what());
  } catch (const ChecksumMismatchError& e) {
    raise(classes.checksum_mismatch, e.what());
  } catch (const EmptyFieldError& e) {
    raise(classes.empty_field, e.what());
  } catch (const CodecError& e) {
    raise(classes.codec, e.what());
  } catch (const BadDataError& e) {
    raise(classes.bad_data, e.what());
  } catch (const Error& e) {
    raise(classes.error, e.what());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  auto& c = classes;
  c.error = make_class(m, "Error", "Base of every headrace error.", {PyExc_Exception});
  c.usage = make_class(m, "UsageError", "An argument that cannot work (a bad option value, a wrong buffer).",
                       {c.error, PyExc_ValueError});
  c.unknown_name = make_class(m, "UnknownNameError", "A name looked up that is not there (a field).",
                              {c.usage, PyExc_KeyError});
  // KeyError's str() quotes its message and OSError's says "[Errno 2] ..." once errno is set: headrace's
  // messages (which name the call, the path and strerror) stay as written.
  const nb::object plain_str = nb::handle(PyExc_BaseException).attr("__str__");
  nb::setattr(nb::handle(c.unknown_name), "__str__", plain_str);
  c.system = make_class(m, "SystemCallError", "A system call failed (errno and strerror are set).",
                        {c.error, PyExc_OSError});
  nb::setattr(nb::handle(c.system), "__str__", plain_str);
  c.file_open = make_class(m, "FileOpenError", "A file could not be opened.", {c.system});
  c.missing_file = make_class(m, "MissingFileError", "The file does not exist.", {c.file_open, PyExc_FileNotFoundError});
  c.file_access = make_class(m, "FileAccessError", "The file may not be opened (permissions).",
                             {c.file_open, PyExc_PermissionError});
  c.not_a_file = make_class(m, "NotAFileError", "The path is a directory.", {c.file_open, PyExc_IsADirectoryError});
  c.unavailable = make_class(m, "UnavailableError", "Something needed here is missing (a GPU, a library, O_DIRECT).",
                             {c.error, PyExc_RuntimeError});
  c.cuda = make_class(m, "CudaError", "A CUDA driver call failed.", {c.error, PyExc_RuntimeError});
  c.gpu_out_of_memory = make_class(m, "GpuOutOfMemoryError", "GPU memory could not be had.",
                                   {c.cuda, PyExc_MemoryError});
  c.bad_data = make_class(m, "BadDataError", "Bad or corrupt data: the message names the file, offset and expectation.",
                          {c.error, PyExc_ValueError});
  c.truncated_file = make_class(m, "TruncatedFileError", "The file ends before its index says.", {c.bad_data, PyExc_EOFError});
  c.bad_magic = make_class(m, "BadMagicError", "Not a headrace container.", {c.bad_data});
  c.unsupported_version = make_class(m, "UnsupportedVersionError", "A container version this build cannot read.", {c.bad_data});
  c.corrupt_index = make_class(m, "CorruptIndexError", "The container's index is inconsistent.", {c.bad_data});
  c.chunk_out_of_bounds = make_class(m, "ChunkOutOfBoundsError", "A chunk lies outside the file.", {c.bad_data});
  c.checksum_mismatch = make_class(m, "ChecksumMismatchError", "A chunk's bytes do not match its checksum.", {c.bad_data});
  c.empty_field = make_class(m, "EmptyFieldError", "A field with no elements where some are needed.", {c.bad_data});
  c.codec = make_class(m, "CodecError", "A chunk could not be decoded.", {c.bad_data});
  nb::register_exception_translator(&translate);
}

}  // namespace headrace::python
