"""Exceptions raised by headrace; each C++ error type maps to exactly one of these.

``BadDataError`` and its subclasses name the file, the offset and what was expected.
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
    FileOpenError,
    GpuOutOfMemoryError,
    SystemCallError,
    TruncatedFileError,
    UnavailableError,
    UnsupportedVersionError,
    UsageError,
)

SystemError = SystemCallError  # the CLI's name for failed system calls

__all__ = [
    "Error",
    "UsageError",
    "SystemCallError",
    "FileOpenError",
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
