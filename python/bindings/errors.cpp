// Each C++ error type maps to exactly one Python exception (python/headrace/errors.py re-exports).
#include "headrace/error.hpp"

#include "bindings.hpp"

namespace nb = nanobind;

namespace headrace::python {

void bind_errors(nb::module_& m) {
  // Registered base first: nanobind tries translators newest-first, so subclasses come last.
  auto error = nb::exception<Error>(m, "Error");
  nb::exception<UsageError>(m, "UsageError", error);
  auto system = nb::exception<SystemError>(m, "SystemCallError", error);
  nb::exception<FileNotFoundError>(m, "FileOpenError", system);
  nb::exception<UnavailableError>(m, "UnavailableError", error);
  auto cuda = nb::exception<CudaError>(m, "CudaError", error);
  nb::exception<GpuOutOfMemoryError>(m, "GpuOutOfMemoryError", cuda);
  auto bad = nb::exception<BadDataError>(m, "BadDataError", error);
  nb::exception<TruncatedFileError>(m, "TruncatedFileError", bad);
  nb::exception<BadMagicError>(m, "BadMagicError", bad);
  nb::exception<UnsupportedVersionError>(m, "UnsupportedVersionError", bad);
  nb::exception<CorruptIndexError>(m, "CorruptIndexError", bad);
  nb::exception<ChunkOutOfBoundsError>(m, "ChunkOutOfBoundsError", bad);
  nb::exception<ChecksumMismatchError>(m, "ChecksumMismatchError", bad);
  nb::exception<EmptyFieldError>(m, "EmptyFieldError", bad);
  nb::exception<CodecError>(m, "CodecError", bad);
}

}  // namespace headrace::python
