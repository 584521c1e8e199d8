"""The one exception type of cubestream, raised for every error the C++ core reports."""


class CubestreamError(Exception):
    """A cubestream error.

    Attributes:
        code: what kind of error, e.g. ``"corrupt_data"``, ``"not_found"``, ``"unsupported"``,
            ``"checksum_mismatch"``, ``"size_mismatch"``, ``"invalid_metadata"``, ``"path_escape"``,
            ``"resource_exhausted"``.
        message: what went wrong, without the context.
        store: the store it happened in (``"file:///data/era5.zarr"``), or ``""``.
        key: the key inside the store (``"t2m/c/0/0/0"``), or ``""``.
        offset: the byte offset inside the key's value, or ``None``.
    """

    def __init__(self, text, code="internal", message="", store="", key="", offset=None):
        super().__init__(text)
        self.code = code
        self.message = message or text
        self.store = store
        self.key = key
        self.offset = offset


class InvalidArgumentError(CubestreamError, ValueError):
    """A bad argument or configuration (code ``"invalid_argument"``): also a ``ValueError``."""


def error_class(code):
    """The exception class the binding raises for an error code."""
    return InvalidArgumentError if code == "invalid_argument" else CubestreamError
