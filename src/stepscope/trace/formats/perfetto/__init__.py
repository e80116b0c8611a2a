"""Perfetto's protobuf trace (``*.pftrace``), which the Perfetto UI and trace processor open.

- :mod:`.tracks`: which track each event goes on (a line's events that overlap without
  nesting are spread over extra tracks, since a Perfetto track is one slice stack);
- :mod:`.write`: a Profile into a file (:func:`~.write.write_perfetto`).

What maps to what: docs/perfetto.md.
"""
