"""The answers a route gives instead of the one asked for, as exceptions: raised where the
answer is decided (a lookup, a parameter's parsing, the analysis cache, a worker job) and
turned into the response in one place, the handler ``create_app`` registers for
``ApiError``. Each carries its HTTP status and its JSON body: ``{"error": "<one line>"}``,
or the progress document while the analysis runs.

No web framework here: ``profile_jobs`` (imported by the workers) raises ``JobFailed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from stepscope.errors import StepscopeError


class ApiError(StepscopeError):
    """An answer other than the one asked for: ``status`` and the JSON ``body``
    (``{"error": message}`` unless given); ``str()`` is the message."""

    status = 400

    def __init__(self, message: str, body: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.body = {"error": message} if body is None else body


class NotFound(ApiError):
    """An unknown run, host, tool, table or capture: 404."""

    status = 404


class BadParameter(ApiError):
    """A parameter that is missing or not what it should be (the viewer's ValueErrors
    too): 400."""

    status = 400


class TooLarge(ApiError):
    """A request body over the route's limit, refused before it is read whole: 413."""

    status = 413


class AnalysisPending(ApiError):
    """The profile's analysis is queued or running: 202, its progress as the body."""

    status = 202

    def __init__(self, progress: Mapping[str, object]) -> None:
        super().__init__("the analysis is still running", progress)

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:
        return (type(self), (self.body,))


class ProfileFailed(ApiError):
    """The profile cannot be read or analysed (the message says why): 422."""

    status = 422


class JobFailed(ApiError):
    """The worker died under a job, or ran out of memory: the request cannot be answered,
    as a profile that cannot be analysed (422)."""

    status = 422
