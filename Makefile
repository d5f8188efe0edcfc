# The two set-up commands of the README: `make lab` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
export VENV

.PHONY: setup lab-setup test-setup lab test test-browser test-paho-oldest test-fast story bench recordings clean

## what the lessons need (Mosquitto, requirements.txt, the kit) in $(VENV), saying what it does
lab-setup:
	@A2A_SET=lab bash scripts/setup.sh

## the lessons' set plus the test tools (requirements-test.txt, chromium, the status plugin's headers)
test-setup:
	@A2A_SET=test bash scripts/setup.sh

## `make setup` (the older name): everything, as test-setup
setup: test-setup

## JupyterLab on the notebooks, with the kit's embedded Mosquitto (or A2A_BROKER_URL)
lab: lab-setup
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/00-start-here.ipynb

## every test: the linter (ruff) and the type checker (mypy), both configured in pyproject.toml, unit, integration against a real Mosquitto,
## the widgets in a real JupyterLab (tests/browser: skipped, saying why, where chromium or playwright
## is missing), notebooks with nbval; then the session and role integration tests again on the oldest
## paho-mqtt pyproject.toml allows (a second venv). pytest-xdist runs the tests on 2 workers, each with its own
## Mosquitto, a file's tests together (a notebook's cells share a kernel); the browser tests, which time each
## lesson's Run All against the time it states, run after them with the machine to themselves
test: test-setup
	$(PY) -m ruff check a2a_nb benchmarks tests scripts
	$(PY) -m mypy
	$(PY) -m pytest -q -rs -n 2 --dist loadfile --ignore=tests/browser tests $(wildcard notebooks/*.ipynb) --nbval --nbval-current-env --nbval-sanitize-with tests/notebooks/sanitize.cfg -p no:cacheprovider
	A2A_BROWSER_SHOTS=out/browser-shots $(PY) -m pytest -q -rs -p no:cacheprovider tests/browser
	$(MAKE) --no-print-directory test-paho-oldest

## the browser tests alone: one JupyterLab, Debian's chromium driven by playwright (skipped, saying why,
## where chromium or playwright is missing; screenshots kept in out/browser-shots)
test-browser: test-setup
	A2A_BROWSER_SHOTS=out/browser-shots $(PY) -m pytest -q -p no:cacheprovider -rs tests/browser

OLDEST_VENV := .venv-paho-oldest
test-paho-oldest:
	@VENV=$(OLDEST_VENV) PAHO=oldest A2A_SET=test bash scripts/setup.sh
	$(OLDEST_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integration/test_session.py $(wildcard tests/integration/test_roles_*.py)

test-fast: test-setup
	$(PY) -m pytest -q -p no:cacheprovider -m "not broker" tests

## the whole story in the terminal; charts saved as PNG files in out/
story: lab-setup
	$(PY) -m a2a_nb story --scenario full --charts out/

## the kit against raw paho-mqtt on the same broker (benchmarks/, next to the package, not in it)
bench: lab-setup
	$(PY) -m benchmarks

## the recordings in a2a_nb/data/recordings/ (shipped in the package) that notebook 07 and the player replay
recordings: lab-setup
	$(PY) scripts/make_recordings.py

clean:
	rm -rf $(VENV) $(OLDEST_VENV) .pytest_cache out
