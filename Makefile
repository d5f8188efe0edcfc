# The two set-up commands of the README: `make lab` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
export VENV

.PHONY: setup lab test test-fast story bench recordings clean

setup:
	@bash scripts/setup.sh

## JupyterLab on the notebooks, with the kit's embedded Mosquitto (or A2A_BROKER_URL)
lab: setup
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/00-start-here.ipynb

## every test: unit, integration against a real Mosquitto, notebooks with nbval
test: setup
	$(PY) -m pytest -q tests $(wildcard notebooks/*.ipynb) --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider

test-fast: setup
	$(PY) -m pytest -q tests/unit

## the whole story in the terminal; charts saved as PNG files in out/
story: setup
	$(PY) -m a2a_nb story --scenario full --charts out/

bench: setup
	$(PY) -m a2a_nb bench

## the recordings in data/ that notebook 07 and the player replay
recordings: setup
	$(PY) scripts/make_recordings.py

clean:
	rm -rf $(VENV) .pytest_cache out
