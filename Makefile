# The two commands a newcomer needs: `make book` (set up + build) and `make test`.
# Neither needs root: Python >= 3.11 and Node.js (for MathJax) are enough to build
# the book. The browser test also needs Debian's chromium, and the grading tests
# Debian's bubblewrap; `make test` installs them when run as root and otherwise says
# which command to run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# uv installs the hash-pinned requirements.txt, what the book needs (compiled from requirements.in), and for
# `make test` requirements-test.txt, which adds grading and the test tools at the same pins (requirements-test.in).
# requirements-test.txt is compiled with requirements-test-overrides.txt (see there why) and installed as locked
# (--no-deps: the lock holds every package, so nothing is resolved again at install time).
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
MATHJAX := node_modules/mathjax/es5/tex-chtml.js
# Executed chapters are cached in _build/.jupyter_cache; that cache and Sphinx's are dropped
# whenever the package (or a helper module in book/) the chapters call changes, so no page shows stale numbers,
# and whenever a figure translation changes (the chapters draw each figure in every edition's language).
LIB_FILES := $(shell find rooflinelib book -name '*.py' -o -name '*.toml' -o -name '*.json' 2>/dev/null) \
	$(wildcard locales/*/LC_MESSAGES/figures.po)
LIB_STAMP := _build/.rooflinelib-stamp
# What the book is built from (tracked files; every file of those folders outside a git checkout): `make test` and
# `make test-fast` build the book first only when one of them is newer than $(BOOK_STAMP), which `make book`
# touches, so that `make book && make test` (.ci/run) builds it once. `make book` always builds.
BOOK_SOURCES := book locales rooflinelib tools solutions exercises _config.yml _toc.yml pyproject.toml \
	requirements.txt package.json package-lock.json
BOOK_INPUTS := $(or $(shell git ls-files -- $(BOOK_SOURCES) 2>/dev/null),$(shell find $(BOOK_SOURCES) -type f 2>/dev/null))
BOOK_STAMP := _build/.book-stamp

.PHONY: setup setup-test book test test-fast screenshots lint browser sandbox lock clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) tools/check_python.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip install --quiet --compile-bytecode --python $(PY) --require-hashes -r requirements.txt
	$(UV) pip install --quiet --python $(PY) --no-deps -e .
	touch $(STAMP)

# Grading (nbgrader, Dask, the grading/ package) and the test tools: not needed to read or build the book.
setup-test: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP) requirements-test.txt grading/pyproject.toml
	$(UV) pip install --quiet --compile-bytecode --python $(PY) --require-hashes --no-deps -r requirements-test.txt
	$(UV) pip install --quiet --python $(PY) --no-deps -e ./grading
	touch $(TEST_STAMP)

$(MATHJAX): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make book needs Node.js and npm for MathJax (https://nodejs.org, or: apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(MATHJAX)

$(LIB_STAMP): $(LIB_FILES)
	rm -rf _build/.jupyter_cache _build/.doctrees
	mkdir -p _build && touch $(LIB_STAMP)

$(BOOK_STAMP): $(BOOK_INPUTS)
	$(MAKE) book

# English into _build/html, then every translated edition of book/editions.toml into _build/html/<code>,
# which reuse the English build's executed chapters.
book: setup $(MATHJAX) $(LIB_STAMP)
	$(VENV)/bin/jupyter-book build -W -n --keep-going .
	$(PY) tools/editions.py build
	touch $(BOOK_STAMP)

browser:
	@bash tools/install-browser.sh

# bubblewrap, the sandbox the grading command runs student kernels in (installed as root, else named).
sandbox:
	@bash tools/install-sandbox.sh

# ruff (lint and format) first; mypy runs beside pytest (from a fresh clone about 8 s of CPU, 0.2 s with its
# .mypy_cache), whose two processes (pytest-xdist) share the suite file by file (tests/conftest.py says which files
# go together and which are split), in the order conftest.py gives
# (files with slow tests first, not xdist's default of the files with most tests first: --no-loadscope-reorder);
# the browser tests (a Chromium in each process) are shared out one edition at a time (tests/conftest.py).
# Each test's time is written to _build/pytest.xml (JUnit XML).
test: $(BOOK_STAMP) setup-test browser sandbox lint
	@mkdir -p _build; $(PY) -m mypy > _build/mypy.log 2>&1 & mypy=$$!; \
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --junitxml=_build/pytest.xml; status=$$?; \
	if wait $$mypy; then echo "mypy: $$(tail -n 1 _build/mypy.log)"; else cat _build/mypy.log; status=1; fi; \
	exit $$status

# A full-page screenshot of every page of every edition, in _build/screenshots/<edition>/, for a person to look at.
screenshots: $(BOOK_STAMP) setup-test browser
	rm -rf _build/screenshots
	ROOFLINE_SCREENSHOTS=1 $(PY) -m pytest -n 2 -k test_page_renders_offline $(wildcard tests/test_browser_*.py)

# The inner loop: unit tests, doctests, the exercises' checks judged in-process (grading/harness.py) and the built
# book's numbers, without kernels, the sandbox or a browser (tests marked slow in conftest.py); `make test` runs
# everything.
test-fast: $(BOOK_STAMP) setup-test
	$(PY) -m pytest -n 2 -m "not slow"

# The repository is clean under ruff (settings in pyproject.toml); `ruff check --fix .` and `ruff format .` repair most findings.
lint: setup-test
	$(PY) -m ruff check --no-cache --output-format concise .
	$(PY) -m ruff format --no-cache --check .

# Re-pin requirements.txt and requirements-test.txt (with hashes) after editing requirements.in or requirements-test.in.
lock: setup
	$(UV) pip compile --quiet --python-version 3.11 --generate-hashes requirements.in -o requirements.txt
	$(UV) pip compile --quiet --python-version 3.11 --generate-hashes --override requirements-test-overrides.txt \
		requirements-test.in -o requirements-test.txt

clean:
	rm -rf _build
