# The two commands of the README: `make demo` and `make test`. Both set everything up.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# The dashboard's page and the HTML report's script, both built by `npm run build`.
WEB_BUILT := src/stepscope/dashboard/static/index.html src/stepscope/render/static/report.js
WEB_SOURCES := $(shell find web/src web/report web/scripts web/index.html web/package.json web/package-lock.json web/tsconfig.json web/vite.config.ts web/vite.report.config.ts -type f 2>/dev/null)
CHROMIUM := /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo test venv web dist protos schemas bench clean

DEMO_STAMP := $(VENV)/.demo-installed
# The compiled extensions' sources: a change rebuilds them (pip install -e . again).
EXTENSION_SOURCES := src/stepscope/capture/_spans.c $(wildcard src/stepscope/kernels/*.c src/stepscope/kernels/*.h)

$(STAMP): pyproject.toml setup.py $(EXTENSION_SOURCES) requirements/test.txt requirements/demo.txt requirements/protoc.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . -r requirements/test.txt
	$(PY) -m pip install --quiet --upgrade --no-deps --target $(VENV)/protoc -r requirements/protoc.txt
	touch $(STAMP)

venv: $(STAMP)

# The dashboard's page and the report's script (TypeScript, bundled by Vite) built into the package.
$(WEB_BUILT) &: $(WEB_SOURCES)
	cd web && npm ci --no-audit --no-fund --loglevel=error && npm run build

web: $(WEB_BUILT)

# What users install: an sdist (with web/ and the built page) and one wheel for every CPython
# >= 3.11 (abi3), tagged manylinux by auditwheel. tests/package installs them in fresh venvs.
DIST_STAMP := dist/.built
PACKAGE_SOURCES := $(shell git ls-files src setup.py pyproject.toml MANIFEST.in LICENSE CHANGELOG.md README.md 2>/dev/null)

$(DIST_STAMP): $(STAMP) $(WEB_BUILT) $(PACKAGE_SOURCES)
	rm -rf dist
	$(PY) -m build --outdir dist . >/dev/null
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/auditwheel repair --wheel-dir dist dist/*-linux_x86_64.whl >/dev/null
	rm dist/*-linux_x86_64.whl
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)

# The browser tests drive Debian's Chromium through Playwright (never Playwright's own download).
$(CHROMIUM):
	$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null

# The demo needs only stepscope and PyTorch (the test venv, a superset, also satisfies it).
$(DEMO_STAMP): pyproject.toml setup.py $(EXTENSION_SOURCES) requirements/demo.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . -r requirements/demo.txt
	touch $(DEMO_STAMP)

# Profiles a real PyTorch training job twice (input-bound, then fixed), prints the reports,
# then serves the dashboard with both runs on http://127.0.0.1:9001/.
demo: $(DEMO_STAMP) $(WEB_BUILT)
	$(VENV)/bin/stepscope demo

test: $(STAMP) $(WEB_BUILT) $(CHROMIUM) $(DIST_STAMP)
	$(PY) -m ruff format --check src tests bench
	$(PY) -m ruff check src tests bench
	$(PY) -m mypy
	cd web && node scripts/generate-types.mjs --check && npm test --silent
	$(PY) -m pytest -q --numprocesses=auto --maxprocesses=4

# Regenerate each tool's JSON Schema from the registry and the page's TypeScript types from
# them (web/src/generated/, committed; make test fails when they are out of date).
schemas: $(STAMP)
	$(PY) -m stepscope.analysis.schemas web/src/generated/schemas
	cd web && npm ci --no-audit --no-fund --loglevel=error && node scripts/generate-types.mjs

# Regenerate src/stepscope/protos/*_pb2.py from the .proto sources.
protos: $(STAMP)
	$(PY) -m stepscope.protos.generate

# Ingest benchmark against HolisticTraceAnalysis. HTA lives only in .venv-bench, never in
# the test venv; it does not depend on torch (checked: pip pulls none), so no torch there.
# The large trace comes from a real torch.profiler run, made (once, cached) with .venv's torch.
# Tools benchmark against XProf's converter: xprof and TensorFlow are in .venv (test deps).
# Distributed benchmark: stepscope's engines (ray is a test dep) in .venv, HTA's multi-rank
# load in .venv-bench/bin/python. Critical path benchmark: the same, HTA's critical path
# analysis (which needs pandas < 3) in .venv-bench.
bench: $(STAMP) $(WEB_BUILT) $(CHROMIUM) $(DIST_STAMP)
	test -x .venv-bench/bin/python || python3 -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet -e . holistictraceanalysis 'pandas<3'
	$(PY) bench/make_large_trace.py
	.venv-bench/bin/python bench/ingest.py
	$(PY) bench/make_xspace.py
	$(PY) bench/tools.py
	$(PY) bench/overhead.py
	$(PY) bench/capture_stop.py
	$(PY) bench/job_side.py
	$(PY) bench/install.py
	$(PY) bench/remote_stop.py
	$(PY) bench/diff.py
	$(PY) bench/trace_viewer.py
	$(PY) bench/trace_viewer_page.py
	$(PY) bench/distributed.py
	$(PY) bench/critical_path.py
	$(PY) bench/summary.py --update-readme

clean:
	rm -rf $(VENV) .venv-bench build dist src/*.egg-info web/node_modules src/stepscope/dashboard/static
