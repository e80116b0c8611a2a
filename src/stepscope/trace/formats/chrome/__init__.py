"""Chrome trace JSON (the Trace Event Format, ``*.trace.json[.gz]``) and PyTorch's Kineto
dialect of it (``*.pt.trace.json[.gz]``).

- :mod:`.document`: a file's JSON decoded (with repairs for real files' drift) into
- :mod:`.columns`: its events as compact columns, built batch by batch;
- :mod:`.read`: the columns imported into a Profile, under a :class:`~.read.Dialect`
  (Chrome's own here), with flow events bound to slices by
- :mod:`.flows`;
- :mod:`.kineto`: the Kineto dialect (devices and streams, args renamed to XSpace's names);
- :mod:`.export`: a Profile written as Chrome trace JSON (Perfetto, chrome://tracing),
  streamed in chunks.
"""
