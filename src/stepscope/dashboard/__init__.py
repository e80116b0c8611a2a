"""The local dashboard: ``stepscope serve --logdir DIR``.

Presentation only: runs and hosts come from ``trace.logdir``, tool data from the analysis
registry (computed in a worker process and cached, ``analysis_cache``), captures from
``capture.client``. The page is a TypeScript application (``web/``) built into ``static/``.
"""
