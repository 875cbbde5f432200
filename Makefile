# Two commands on a fresh machine: `make demo` and `make test`.
# Both create .venv when missing and install once (torch's CPU wheel first, pinned,
# so sentence-transformers does not pull a CUDA build); a second call reinstalls nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install test check lint lint-imports demo bench clean
CHROMIUM := /usr/bin/chromium
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml Makefile | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev,plot,mcp,postgres,console,browser]' --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

# the review console's browser tests drive Debian's Chromium (Playwright downloads no
# browser here); installed once, only when missing
$(CHROMIUM):
	$(SUDO) apt-get update -q
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium chromium-driver

# lint and type checks first (rules and strictness: pyproject.toml), then the tests; the
# shared-deployment tests start a throwaway PostgreSQL cluster and a Chroma server on
# loopback once per session and stop both at its end (tests/conftest.py); the console's
# browser tests need Chromium; SKILLS_TESTS_STRICT=1: a missing server or browser fails
# the run instead of skipping its tests (tests/missing_parts.py); two pytest-xdist workers
# (one per core here), the tests marked slow started first (tests/conftest.py), each worker
# with its own servers and temporary folders, its one embedding model (also lent, over a Unix
# socket, to the processes the tests start: tests/embed_service.py) and one forkserver
# preloaded with the library for the concurrency tests' worker processes (tests/processes.py);
# `SKILLS_TESTS_CPU_LOG=FILE make test` logs each test's CPU seconds (tests/cpu_profile.py);
# the tests marked bench (benchmark slices on τ-bench data) run in `make bench`, not here
test: $(STAMP) $(CHROMIUM)
	$(PY) -m ruff check skill_library sandbox benchmarks
	$(PY) -m mypy
	$(MAKE) --no-print-directory lint-imports
	SKILLS_TESTS_STRICT=1 $(PY) -m pytest -q -n auto --dist worksteal -m "not bench"

# the fast tier, for the edit-test loop (64 s here with another test run beside it: mypy is most
# of it; 210 tests in 15 s): lint, types and the unit tests
# of the modules that need no server, no browser and no model download; `make test` runs all
CHECK_TESTS := tests/test_models.py tests/test_privacy.py tests/test_value_fit.py \
	tests/test_induction_dataflow.py tests/test_induction_validation.py tests/test_settings.py \
	tests/test_grounding.py tests/test_bad_text.py tests/test_docs.py tests/test_descriptions.py
check: $(STAMP)
	$(PY) -m ruff check skill_library sandbox benchmarks
	$(PY) -m mypy
	$(MAKE) --no-print-directory lint-imports
	$(PY) -m pytest -q -m "not slow" $(CHECK_TESTS)

lint: $(STAMP)
	$(PY) -m ruff check skill_library sandbox benchmarks
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

# the layers (pyproject.toml, [tool.importlinter]; docs/architecture.md): a module imports
# only from its own layer and those below (import-linter, the dev extra; under a second)
lint-imports: $(STAMP)
	$(VENV)/bin/lint-imports

demo: $(STAMP)
	$(PY) -m benchmarks demo

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]' --config-settings editable_mode=compat
	# the benchmark slices of the test suite (marked bench), then the benchmarks themselves
	$(PY) -m pytest -q -n auto --dist worksteal -m bench
	$(PY) benchmarks/perf_fetch.py --sizes 1000,10000,100000
	$(PY) benchmarks/perf_sandbox.py
	$(PY) benchmarks/perf_shared.py --clients 2,4,8 --seconds 10
	$(PY) benchmarks/perf_reopen.py --sizes 1000,10000
	# issue 22: τ-bench retail (data in ../shared/benchmarks/taubench-retail, or pass --data DIR)
	$(PY) -m benchmarks taubench --protocol cv --no-progress
	$(PY) -m benchmarks taubench --protocol dev --out benchmarks/results/taubench_dev --no-progress
	$(PY) benchmarks/perf_learn.py --taubench
	# issue 21's suites (each also runs the privacy check: exit 3 on a personal value found);
	# all three run, then the target fails if any did
	status=0; for suite in lookalike paraphrase misuse; do \
	  $(PY) -m benchmarks $$suite --no-progress || status=$$?; done; exit $$status

clean:
	rm -rf $(VENV) .pytest_cache
