# The two commands of the README: `make demo` (the main job, end to end) and `make test` (every test).
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup demo test stop bench

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

test: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports
	.venv/bin/pytest

stop:
	$(PY) -m testweb stop
	$(PY) -m stack stop

bench: setup
	$(PY) bench/bench_crawl.py
	$(PY) bench/bench_validation.py
	$(PY) bench/bench_bloom.py
	$(PY) -m bench.bench_dedup
	$(PY) -m bench.bench_search
	$(PY) -m bench.bench_catalogue
	$(PY) -m stack start
	$(PY) -m bench.bench_workers
