"""The input-bound finding's advice, from what the DataLoader already does (``loader_settings``)."""

from __future__ import annotations

from stepscope.analysis.findings.loader_settings import LoaderSettings

LOOK_AT_INPUT = "Look at the input pipeline analyzer for where the input time goes."
LOAD_IN_PARALLEL = (
    "Load data in parallel (PyTorch: DataLoader(num_workers=..., pin_memory=True); tf.data: map(num_parallel_calls=AUTOTUNE)).",
    "Prefetch the next batches while the current step runs (DataLoader prefetch_factor; dataset.prefetch(AUTOTUNE)).",
)
# A DataLoader prefetches this many batches per worker unless told otherwise (PyTorch's default).
DEFAULT_PREFETCH_FACTOR = 2


def input_advice(loader: LoaderSettings | None, has_device: bool) -> tuple[str, ...]:
    """The next step from what the loader already does: loading in parallel is advised only
    to a loader that does not (or an unknown one); a loader with workers is told what comes
    after them, each setting it lacks by name."""
    if loader is None or not loader.parallel:
        return (LOOK_AT_INPUT, *LOAD_IN_PARALLEL)
    more = f"num_workers={2 * loader.num_workers}" if loader.num_workers else "more workers"
    advice = [
        f"The DataLoader already loads in parallel ({loader.described()}): look at the input pipeline analyzer's stages for what the workers spend their time on.",
        f"Where it is reading (storage latency) and the CPU has cores to spare: {more}.",
        "Where it is decoding and transforms: make them cheaper (cache decoded samples, lighter augmentation, transforms on the device); more workers help only while cores are free.",
    ]
    if loader.prefetch_factor is not None and loader.prefetch_factor <= DEFAULT_PREFETCH_FACTOR:
        advice.append(
            f"Prefetch deeper: prefetch_factor={loader.prefetch_factor} keeps {loader.prefetch_factor} batches per worker ready; raise it where the wait comes in bursts."
        )
    if has_device and loader.pin_memory is False:
        advice.append("pin_memory=True: batches in pinned memory copy to the GPU faster and asynchronously.")
    if loader.persistent_workers is False and loader.passes > 1:
        advice.append("persistent_workers=True keeps the workers from one epoch to the next instead of starting them again.")
    return tuple(advice)
