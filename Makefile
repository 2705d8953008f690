# Convenience targets; each one calls tools/run.py (the README's commands), which needs only Python.
PY ?= python3

.PHONY: book test lint matrix notebooks colab workshop check bench wheelhouse clean

book:        ## set up .venv and build the website into _build/html
	$(PY) tools/run.py book

test:        ## the whole test suite: lint, -W book build, unit tests, strict nbval (prints stage times)
	$(PY) tools/run.py test

lint:        ## ruff check only (configured in pyproject.toml; `make test` runs it too)
	.venv/bin/ruff check .

matrix:      ## the compatibility matrix of .ci/run: one fresh environment per supported-versions leg
	$(PY) tools/run.py matrix

notebooks:   ## re-execute every chapter and store its outputs (after changing package code)
	$(PY) tools/run.py notebooks

colab:       ## write the chapters' Colab copies into colab/ (after changing a chapter; commit them)
	$(PY) tools/run.py colab

workshop:    ## the workshop kit in _build/workshop/: student and instructor notebooks, website, slides, zips
	$(PY) tools/run.py workshop

check:       ## static notebook hygiene only (fast)
	.venv/bin/python -m tools.check_notebooks

bench:       ## benchmark tables (never part of the tests)
	.venv/bin/python benchmarks/bench_model.py
	.venv/bin/python benchmarks/bench_numpy.py
	.venv/bin/python benchmarks/bench_train.py

wheelhouse:  ## download every dependency for an offline workshop install
	$(PY) tools/run.py wheelhouse

clean:
	rm -rf _build .ci-legs
