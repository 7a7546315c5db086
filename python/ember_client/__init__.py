"""ember_client: Python client for an ember embedding cluster.

Same API as the C++ SDK (client/client.h); see client.py.
"""

from .client import Client, Embeddings
from .errors import (BadRequestError, EmberError, InternalError, OverloadedError,
                     TimeoutError, TooLongError, UnauthorizedError, UnavailableError,
                     UnknownModelError)

__all__ = ["Client", "Embeddings", "EmberError", "BadRequestError", "UnknownModelError",
           "OverloadedError", "TimeoutError", "UnavailableError", "TooLongError",
           "InternalError", "UnauthorizedError"]
__version__ = "0.1.0"
