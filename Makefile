# The two commands a newcomer needs: `make book` (set up + build) and `make test`.
# Neither needs root: Python >= 3.11 and Node.js (for MathJax) are enough to build
# the book. The browser test also needs Debian's chromium, and the grading tests
# Debian's bubblewrap; `make test` installs them when run as root and otherwise says
# which command to run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# uv installs the hash-pinned requirements.txt (and compiles it from requirements.in).
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
MATHJAX := node_modules/mathjax/es5/tex-chtml.js
# Executed chapters are cached in _build/.jupyter_cache; that cache and Sphinx's are dropped
# whenever the package (or a helper module in book/) the chapters call changes, so no page shows stale numbers,
# and whenever a figure translation changes (the chapters draw each figure in every edition's language).
LIB_FILES := $(shell find rooflinelib book -name '*.py' -o -name '*.toml' -o -name '*.json' 2>/dev/null) \
	$(wildcard locales/*/LC_MESSAGES/figures.po)
LIB_STAMP := _build/.rooflinelib-stamp

.PHONY: setup book test browser sandbox lock clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml grading/pyproject.toml
	@$(PYTHON) tools/check_python.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip install --quiet --compile-bytecode --python $(PY) --require-hashes -r requirements.txt
	$(UV) pip install --quiet --python $(PY) --no-deps -e . -e ./grading
	touch $(STAMP)

$(MATHJAX): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make book needs Node.js and npm for MathJax (https://nodejs.org, or: apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(MATHJAX)

$(LIB_STAMP): $(LIB_FILES)
	rm -rf _build/.jupyter_cache _build/.doctrees
	mkdir -p _build && touch $(LIB_STAMP)

# English into _build/html, then the Korean and Chinese editions into _build/html/ko and /zh,
# which reuse the English build's executed chapters.
book: setup $(MATHJAX) $(LIB_STAMP)
	$(VENV)/bin/jupyter-book build -W -n --keep-going .
	$(PY) tools/editions.py build ko zh

browser:
	@bash tools/install-browser.sh

# bubblewrap, the sandbox the grading command runs student kernels in (installed as root, else named).
sandbox:
	@bash tools/install-sandbox.sh

# Two processes (pytest-xdist) share the suite; the browser tests (tests/test_browser_*.py) run on their own afterwards,
# so that page loads are never starved by the grading tests' kernels.
test: book browser sandbox
	$(PY) -m pytest -n 2 --dist loadfile $(addprefix --ignore=,$(wildcard tests/test_browser_*.py))
	$(PY) -m pytest $(wildcard tests/test_browser_*.py)

# Re-pin requirements.txt (with hashes) after editing requirements.in.
lock: setup
	$(UV) pip compile --quiet --python-version 3.11 --generate-hashes requirements.in -o requirements.txt

clean:
	rm -rf _build
