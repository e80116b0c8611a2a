"""The local dashboard: ``stepscope serve --logdir DIR``.

Presentation only: runs and hosts come from ``trace.logdir``, tool data from the analysis
registry (computed in a worker process and cached, ``jobs.analysis_cache``), captures from
``capture.client``. The page is a TypeScript application (``web/``) built into ``static/``.

``api/`` answers requests, ``jobs/`` does the work that outlives one (worker processes,
caches, captures); ``api`` imports ``jobs``, never the reverse. Here: the two ways to serve
it (``server``: uvicorn for ``stepscope serve``; ``tensorboard_plugin`` over ``wsgi``: a
TensorBoard tab) and ``api_errors``, which both sides raise.
"""
