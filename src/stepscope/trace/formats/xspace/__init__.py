"""XSpace (``*.xplane.pb``), the protobuf TensorFlow, JAX and XProf write, and stepscope's
format on disk.

- :mod:`.read`: a file into a Profile (:func:`~.read.read_xspace`), from the columns of
- :mod:`.decode`: the file's bytes as per-plane columns, by protobuf's messages (where the
  kernels are not compiled) or by
- :mod:`.wire`: the decoder of protobuf's wire format (a kernel: C where built), every
  XEvent and XStat in one pass;
- :mod:`.write`: a Profile into a file as TSL writes one (:func:`~.write.write_xspace`,
  :func:`~.write.xspace_chunks`), its events encoded in bulk by
- :mod:`.encode`: the encoder of a plane's XEvents (kernels too);
- :mod:`.schema`: what the values mean, shared by all of them (stat kinds, the ``flow``
  stat's packing, the id stats, the session clock).
"""
