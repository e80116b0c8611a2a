# The two commands of the README: `make demo` and `make test`. Both set everything up.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv protos bench clean

$(STAMP): pyproject.toml requirements/test.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . -r requirements/test.txt
	touch $(STAMP)

venv: $(STAMP)

# Until the capture and dashboard issues land, the demo shows the profile foundation on
# a real GPU trace: what `stepscope info` reports about it.
demo: $(STAMP)
	$(VENV)/bin/stepscope info ../shared/traces/kineto/alexnet_small.pt.trace.json.gz

test: $(STAMP)
	$(PY) -m pytest -q

# Regenerate src/stepscope/protos/*_pb2.py from the .proto sources.
protos: $(STAMP)
	$(PY) -m stepscope.protos.generate

bench: $(STAMP)
	$(PY) -m pip install --quiet holistictraceanalysis
	$(PY) bench/ingest.py

clean:
	rm -rf $(VENV) build src/*.egg-info
