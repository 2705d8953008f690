# Convenience targets; each one calls tools/run.py (the README's commands), which needs only Python.
PY ?= python3

.PHONY: book test notebooks check bench wheelhouse clean

book:        ## set up .venv and build the website into _build/html
	$(PY) tools/run.py book

test:        ## the whole test suite: -W book build, unit tests, strict nbval
	$(PY) tools/run.py test

notebooks:   ## re-execute every chapter and store its outputs (after changing package code)
	$(PY) tools/run.py notebooks

check:       ## static notebook hygiene only (fast)
	.venv/bin/python tools/check_notebooks.py

bench:       ## benchmark tables (never part of the tests)
	.venv/bin/python benchmarks/bench_model.py
	.venv/bin/python benchmarks/bench_numpy.py
	.venv/bin/python benchmarks/bench_train.py

wheelhouse:  ## download every dependency for an offline workshop install
	$(PY) tools/run.py wheelhouse

clean:
	rm -rf _build
