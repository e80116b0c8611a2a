"""Types of ``stepscope.capture._spans``, the C of ``_spans.c``: the compiled fast path of
:mod:`stepscope.capture.annotations`, whose pure-Python classes it stands for (``Span`` for
``_PySpan``, ``Idle`` for ``_PyIdle``, ``trace`` for ``_py_trace``). Without this file
``stepscope.trace`` would be ``Any`` to users' editors and to mypy."""

from collections.abc import Callable
from types import TracebackType
from typing import Any, Final, final

from stepscope.capture.annotations import Recording, TraceFunction

@final
class Idle:
    """The context manager ``trace`` hands out while nothing records."""

    def __enter__(self) -> Idle: ...
    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None, /) -> None: ...

@final
class Span:
    """One annotated block: recorded into ``recording`` when it exits."""

    def __new__(cls, name: str, args: dict[str, Any] | None, recording: Recording, /) -> Span: ...
    def __enter__(self) -> Span: ...
    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None, /) -> None: ...

@final
class Tracer:
    """The type of ``trace``: a callable with a ``__dict__``, so it takes ``function``."""

    function: TraceFunction
    def __call__(self, name: str, **args: object) -> Span | Idle: ...

IDLE: Final[Idle]
trace: Final[Tracer]

def configure(recording_type: type[Recording], thread_name: Callable[[], str], /) -> None: ...
def set_recording(recording: Recording | None, /) -> None: ...
