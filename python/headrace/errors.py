"""Exceptions raised by headrace; each C++ error type maps to one of these.

Each also derives from the Python built-in that says what kind of error it is, so code that knows
nothing of headrace catches them as it would any other:

| headrace | also a |
|---|---|
| ``UsageError`` (a bad argument) | ``ValueError`` |
| ``OutOfRangeError`` (an index past the end: a frame, a grid point, an element) | ``IndexError`` (and ``ValueError``) |
| ``UnknownNameError`` (a field that is not there) | ``KeyError`` |
| ``SystemCallError`` (``errno``, ``strerror`` set) | ``OSError`` |
| ``MissingFileError``, ``FileAccessError``, ``NotAFileError`` (kinds of ``FileOpenError``) | ``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError`` |
| ``UnavailableError``, ``CudaError`` | ``RuntimeError`` |
| ``GpuOutOfMemoryError`` | ``MemoryError`` |
| ``BadDataError`` and its kinds (``TruncatedFileError`` also an ``EOFError``) | ``ValueError`` |

``BadDataError`` and its subclasses name the file, the offset and what was expected. Where in the C++
source an error was raised is in its ``source_location`` attribute, not in the message (``headrace
--debug`` prints it).
"""

from headrace._ext import (  # noqa: F401  (re-exported)
    BadDataError,
    BadMagicError,
    ChecksumMismatchError,
    ChunkOutOfBoundsError,
    CodecError,
    CorruptIndexError,
    CudaError,
    EmptyFieldError,
    Error,
    FileAccessError,
    FileOpenError,
    GpuOutOfMemoryError,
    MissingFileError,
    NotAFileError,
    SystemCallError,
    TruncatedFileError,
    UnavailableError,
    UnknownNameError,
    UnsupportedVersionError,
    UsageError,
)

SystemError = SystemCallError  # the CLI's name for failed system calls


class OutOfRangeError(UsageError, IndexError):
    """An index past the end of what it indexes (a frame, a grid point, an element, a field's frames).

    An ``IndexError``, so ``for a in ds.array("x")`` and NumPy's sequence protocol stop where they
    should, and still a ``UsageError`` (exit status 2 on the command line), as it was before."""

__all__ = [
    "Error",
    "UsageError",
    "OutOfRangeError",
    "UnknownNameError",
    "SystemCallError",
    "FileOpenError",
    "MissingFileError",
    "FileAccessError",
    "NotAFileError",
    "UnavailableError",
    "CudaError",
    "GpuOutOfMemoryError",
    "BadDataError",
    "TruncatedFileError",
    "BadMagicError",
    "UnsupportedVersionError",
    "CorruptIndexError",
    "ChunkOutOfBoundsError",
    "ChecksumMismatchError",
    "EmptyFieldError",
    "CodecError",
]
