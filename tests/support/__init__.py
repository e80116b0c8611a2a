"""Code the tests share; nothing here is collected by pytest.

Test modules (``test_*.py``) import shared code from here only, never from one another
(``tests/test_test_layout.py`` checks it), and every helper module under ``tests/`` lives
here; ``conftest.py`` files hold fixtures only.

- ``traces``: the repository's root, the real profiles in ``../shared/traces``, a plain
  JSON reader;
- ``reference``: slow, obvious implementations the fast code is checked against (the
  XSpace reader and writer, the host tracer's plane, the trace viewer's queries);
- ``xspaces``, ``fuzz``, ``hostile``: XSpaces built by hand or by Hypothesis, damage to
  real files, files that are costly to a naive reader;
- ``frameworks``, ``framework_loops``, ``tracers``, ``data_jobs``: real framework
  profilers run in child processes, the loops they run, what the child scripts share;
- ``demo_runs``: ``stepscope demo`` run in a child process (the demo test and the
  dashboard's logdir share one run, ``tests/conftest.py``);
- ``service_job``, ``remote_jobs``: training processes with a profiler server, captured
  remotely;
- ``cli``: what the CLI's error answers must look like;
- ``tables``: the dashboard's table search and sort, to say which rows an address shows;
- ``dashboard``: a served dashboard (its own process or in-process), its log directory,
  fake worker-pool jobs, the browser.

Modules run in child processes (``data_jobs``, ``dashboard.fake_jobs`` in spawned workers)
import neither pytest nor a test module.
"""
