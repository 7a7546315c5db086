"""Typed errors, as on the wire (docs/protocol.md, "Error").

Every failure the client reports is an EmberError whose ``code`` is the wire
name of the error code ("UNKNOWN_MODEL", "TIMEOUT", ...), so callers can tell
"fix the request" from "retry later" without parsing messages. Each code also
has its own subclass, for ``except UnknownModelError:``.
"""

BAD_REQUEST = "BAD_REQUEST"
UNKNOWN_MODEL = "UNKNOWN_MODEL"
OVERLOADED = "OVERLOADED"
TIMEOUT = "TIMEOUT"
UNAVAILABLE = "UNAVAILABLE"
TOO_LONG = "TOO_LONG"
INTERNAL = "INTERNAL"
UNAUTHORIZED = "UNAUTHORIZED"

CODES = (BAD_REQUEST, UNKNOWN_MODEL, OVERLOADED, TIMEOUT, UNAVAILABLE, TOO_LONG, INTERNAL,
         UNAUTHORIZED)


class EmberError(Exception):
    """An ember failure: ``code`` (wire name) and ``message`` (for people)."""

    code = INTERNAL

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message

    def __str__(self):
        return "%s: %s" % (self.code, self.message)


class BadRequestError(EmberError):
    code = BAD_REQUEST


class UnknownModelError(EmberError):
    code = UNKNOWN_MODEL


class OverloadedError(EmberError):
    code = OVERLOADED


class TimeoutError(EmberError):  # noqa: A001 - ember's TIMEOUT, not the builtin
    code = TIMEOUT


class UnavailableError(EmberError):
    code = UNAVAILABLE


class TooLongError(EmberError):
    code = TOO_LONG


class InternalError(EmberError):
    code = INTERNAL


class UnauthorizedError(EmberError):
    code = UNAUTHORIZED


_BY_CODE = {cls.code: cls for cls in (BadRequestError, UnknownModelError, OverloadedError,
                                      TimeoutError, UnavailableError, TooLongError, InternalError,
                                      UnauthorizedError)}


def error_for(code, message):
    """The exception for a wire error. A code this version does not know is
    INTERNAL with the code kept in the message (as the C++ client does)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return InternalError("%s: %s" % (code, message))
    return cls(message)
