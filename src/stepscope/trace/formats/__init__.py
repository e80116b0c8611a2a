"""The profile's codecs, one folder per file format: ``xspace`` (``*.xplane.pb``, read and
written) and ``chrome`` (Chrome / Perfetto trace JSON and PyTorch's Kineto dialect of it,
read and exported).

A codec converts between its format and the model (:mod:`stepscope.trace.model`); it
imports the model's modules and never another codec. The registries
(:mod:`stepscope.trace.readers`, :mod:`stepscope.trace.writers`) choose one by a file's
content or name.
"""
