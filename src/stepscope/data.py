"""Input-pipeline annotations: how long the training loop waits for data, and what the
data code does meanwhile.

Two pieces, both free when no capture records (one check per item or per block)::

    import stepscope
    import stepscope.data

    loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=4)
    batches = iter(stepscope.data.instrument(loader, name="train"))
    with stepscope.profile("logs"):
        for number in range(len(loader)):
            with stepscope.step(number):
                batch = next(batches)          # recorded as stepscope.data.wait
                train_step(batch)

    class Images(torch.utils.data.Dataset):
        def __getitem__(self, index):
            with stepscope.data.stage("read"):       # demanded file read
                raw = open(self.paths[index], "rb").read()
            with stepscope.data.stage("decode"):     # preprocessing
                image = decode(raw)
            with stepscope.data.stage("transform"):  # preprocessing
                return augment(image)

- ``instrument(iterable, name="batch")`` wraps any iterable (a PyTorch ``DataLoader``, a
  ``tf.data`` dataset, a generator) and yields the same items. Every ``next()`` the loop
  waits on is one ``stepscope.data.wait`` event with the stats ``source`` (``name``) and
  ``index`` (the item's position in this pass, from 0). The analyses count that wait as the
  step's *input* time, as they count PyTorch's ``enumerate(DataLoader)`` fetches. The wrapper
  has ``len()`` when the iterable has one, may be iterated again (one pass per epoch) when the
  iterable may, and forwards other attributes (``loader.dataset``, ``loader.sampler``) to it.
  The fetch that finds the end (``StopIteration``) and a fetch that raises are not recorded;
  both propagate unchanged. The first recorded wait of each pass in each capture also
  carries the iterable's loader settings, where it has them as attributes (a PyTorch
  ``DataLoader``): ``num_workers``, ``prefetch_factor``, ``pin_memory`` and
  ``persistent_workers`` (``names.LOADER_SETTINGS``; booleans as 0/1, ``None`` left out),
  so the overview's input advice can take the next step from what the loader already does.
- ``stage(name, **args)`` (a context manager) and ``@stage.function(name)`` (a decorator)
  mark work in dataset code as ``stepscope.data.<name>``. The standard stages and the input
  pipeline analyzer's category for each: ``read`` (demanded file read), ``prefetch``
  (advanced file read: reading ahead), ``decode``, ``transform``, ``collate``
  (preprocessing); any other name is allowed and counted as ``other``. ``wait`` is taken.

A step's window reaches back over the input wait that ends just before its first
``stepscope.step`` marker, so the natural ``for batch in instrument(loader): with
stepscope.step(n): ...`` loop counts each batch's wait as its step's input time.

DataLoader worker processes: a worker forked while a capture records (the default ``fork``
start method on Linux; workers start when the loop calls ``iter(loader)``) writes its stage
events to a spool file that the capture reads back; they appear on lines named ``process
<pid> / <thread>``. Workers forked outside the capture (before it, and so also
``persistent_workers=True`` workers kept from an earlier epoch or capture) or started with
``spawn`` / ``forkserver`` record nothing; the wait in the training loop is recorded all the
same.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, ParamSpec, TypeVar

from stepscope.capture.annotations import _IDLE, Annotation, _Span, current_recording
from stepscope.trace import names

__all__ = ["STAGES", "instrument", "stage"]

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")

# The stages the input pipeline analyzer puts in a category of their own.
STAGES = ("read", "prefetch", "decode", "transform", "collate")
WAIT = names.STEPSCOPE_INPUT_WAIT
_RESERVED = WAIT.removeprefix(names.STEPSCOPE_INPUT_STAGE_PREFIX)  # "wait": the loop's, not a stage
_now = time.perf_counter_ns  # the annotations' clock


def _loader_settings(iterable: object) -> dict[str, int]:
    """The ``names.LOADER_SETTINGS`` attributes ``iterable`` has (a DataLoader's), as ints.
    Read once per pass: four ``getattr`` calls."""
    settings = {}
    for key in names.LOADER_SETTINGS:
        value = getattr(iterable, key, None)
        if isinstance(value, (bool, int)):
            settings[key] = int(value)
    return settings


class _InstrumentedIterator(Iterator[T]):
    """One pass over the wrapped iterable; every delivered item's fetch is a wait event, the
    first one recorded in each capture with the loader's settings."""

    __slots__ = ("_described", "_index", "_iterator", "_settings", "_source")

    def __init__(self, iterator: Iterator[T], source: str, settings: dict[str, int] | None = None) -> None:
        self._iterator = iterator
        self._source = source
        self._index = 0
        self._settings = settings or {}
        self._described: object = None  # the recording the settings went to

    def __iter__(self) -> _InstrumentedIterator[T]:
        return self

    def __next__(self) -> T:
        recording = current_recording()
        if recording is None:
            item = next(self._iterator)
            self._index += 1
            return item
        start = _now()
        item = next(self._iterator)  # StopIteration and errors leave here, unrecorded
        stats: dict[str, Any] = {"source": self._source, "index": self._index}
        if self._described is not recording:
            self._described = recording
            stats.update(self._settings)
        recording.add(WAIT, start, _now(), stats)
        self._index += 1
        return item

    def __getattr__(self, attribute: str) -> Any:
        if attribute in _InstrumentedIterator.__slots__:  # not set yet (a copy being made)
            raise AttributeError(attribute)
        return getattr(self._iterator, attribute)


class Instrumented(Generic[T]):
    """``instrument(iterable)``: the iterable, whose fetches are recorded while a capture
    records. Each ``iter()`` is a new pass of the wrapped iterable."""

    __slots__ = ("_iterable", "_source")

    def __init__(self, iterable: Iterable[T], source: str) -> None:
        self._iterable = iterable
        self._source = source

    def __iter__(self) -> _InstrumentedIterator[T]:
        return _InstrumentedIterator(iter(self._iterable), self._source, _loader_settings(self._iterable))

    def __getattr__(self, attribute: str) -> Any:
        if attribute in Instrumented.__slots__:  # not set yet (a copy being made)
            raise AttributeError(attribute)
        return getattr(self._iterable, attribute)

    def __repr__(self) -> str:
        return f"stepscope.data.instrument({self._iterable!r}, name={self._source!r})"


class _SizedInstrumented(Instrumented[T]):
    """An instrumented iterable whose iterable has ``len()`` (a DataLoader: its batches)."""

    __slots__ = ()

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]  # made only for an iterable with __len__ (instrument)


class _SizedInstrumentedIterator(_InstrumentedIterator[T]):
    __slots__ = ()

    def __len__(self) -> int:
        return len(self._iterator)  # type: ignore[arg-type]  # made only for an iterator with __len__ (instrument)


def instrument(iterable: Iterable[T], name: str = "batch") -> Iterable[T]:
    """Wraps ``iterable`` so that each item the loop waits for is a ``stepscope.data.wait``
    event (stats ``source=name``, ``index``). Items, ``len()``, ``StopIteration`` and
    exceptions are the iterable's own. An iterator (a generator) gives an iterator; any
    other iterable gives an iterable that starts a new pass at each ``iter()``."""
    sized = hasattr(type(iterable), "__len__")
    if isinstance(iterable, Iterator) and iter(iterable) is iterable:
        return (_SizedInstrumentedIterator if sized else _InstrumentedIterator)(iterable, name, _loader_settings(iterable))
    return (_SizedInstrumented if sized else Instrumented)(iterable, name)


def _stage_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a stepscope.data stage needs a non-empty name, not {name!r}")
    if name == _RESERVED:
        raise ValueError(f"{names.STEPSCOPE_INPUT_STAGE_PREFIX}{_RESERVED} is the training loop's wait (instrument), not a stage")
    return names.STEPSCOPE_INPUT_STAGE_PREFIX + name


class _Stage:
    """``stepscope.data.stage``: a context manager factory and a decorator."""

    __slots__ = ()

    def __call__(self, name: str, **args: Any) -> Annotation:
        """``with stepscope.data.stage("decode"):`` marks a block of input work."""
        if not name or name == _RESERVED or not isinstance(name, str):
            _stage_name(name)  # raises, recording or not
        recording = current_recording()
        if recording is None:
            return _IDLE
        return _Span(names.STEPSCOPE_INPUT_STAGE_PREFIX + name, args or None, recording)

    def function(self, name: str, **args: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """``@stepscope.data.stage.function("collate")``: marks every call of the function
        (a ``collate_fn``, a transform)."""
        event = _stage_name(name)

        def decorate(func: Callable[P, R]) -> Callable[P, R]:
            @functools.wraps(func)
            def wrapper(*call_args: P.args, **call_kwargs: P.kwargs) -> R:
                recording = current_recording()
                if recording is None:
                    return func(*call_args, **call_kwargs)
                with _Span(event, args or None, recording):
                    return func(*call_args, **call_kwargs)

            return wrapper

        return decorate


stage = _Stage()
