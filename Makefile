# Two targets a newcomer needs: `make book` (set up + build) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup book test clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	bash tools/install-system-deps.sh
	touch $(STAMP)

book: setup
	$(VENV)/bin/jupyter-book build -W -n --keep-going .

test: setup
	$(PY) -m pytest

clean:
	rm -rf _build
