#!/usr/bin/env bash
# Set-up shared by `make lab` and `make test`: a virtualenv with the pinned requirements and the
# kit installed in it, and a Mosquitto broker binary (the kit starts its own broker process).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

# The Python pyproject.toml's requires-python names (the pinned requirements need it), checked first
# so an older interpreter is refused in one line, not after minutes of pip.
needed="$(sed -n 's/^requires-python = ">=\([0-9]*\.[0-9]*\)"$/\1/p' pyproject.toml)"
interpreter="$PYTHON"
[ -x "$VENV/bin/python" ] && interpreter="$VENV/bin/python"  # an existing venv: its own Python counts
have="$("$interpreter" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
if [ -z "$have" ]; then
  echo "error: no Python at '$interpreter': install Python $needed+ (or set PYTHON=/path/to/python3)" >&2
  exit 1
fi
if [ "${have%%.*}" -lt "${needed%%.*}" ] || { [ "${have%%.*}" -eq "${needed%%.*}" ] && [ "${have#*.}" -lt "${needed#*.}" ]; }; then
  echo "error: a2a_nb needs Python $needed+, '$interpreter' is $have: set PYTHON to a newer one (e.g. PYTHON=python$needed make lab; remove an old $VENV first)" >&2
  exit 1
fi

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi
}

have_mosquitto() {
  command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || [ -x /usr/local/sbin/mosquitto ] || [ -x /opt/homebrew/sbin/mosquitto ]
}

if ! have_mosquitto && [ -z "${A2A_BROKER_URL:-}" ]; then
  if command -v apt-get >/dev/null && as_root true; then
    echo "== installing mosquitto with apt-get"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq mosquitto >/dev/null
  else
    cat >&2 <<'MSG'
error: the Mosquitto broker is not installed, and this script cannot install it for you.
Install it, then run the same make command again:
  Debian/Ubuntu:  sudo apt-get install mosquitto
  macOS:          brew install mosquitto
  conda:          conda install -c conda-forge mosquitto
Or use a broker you already run:  export A2A_BROKER_URL=mqtt://host:1883
MSG
    exit 1
  fi
fi

# The headers and compiler for the broker-managed status plugin (a2a_nb/mqtt/plugins/a2a_status.c, built on
# first use). Optional: without them the embedded broker runs without it, and the probe reports
# broker-managed status "not offered" (the tests that need it say why they are skipped).
if [ ! -f /usr/include/mosquitto_broker.h ] || [ ! -f /usr/include/mosquitto.h ]; then
  if command -v apt-get >/dev/null && as_root true; then
    echo "== installing the Mosquitto plugin headers with apt-get (broker-managed status)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq gcc mosquitto-dev libmosquitto-dev >/dev/null \
      || echo "note: the Mosquitto plugin headers could not be installed: broker-managed status stays off" >&2
  fi
fi

# Debian's Chromium for the browser tests (tests/browser: JupyterLab driven by playwright). Optional:
# without it those tests are skipped, saying why. Playwright's own browser download is not used.
if [ "${PAHO:-}" != oldest ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null && as_root true; then
    echo "== installing chromium with apt-get (for tests/browser)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null \
      || echo "note: 'apt-get install chromium' failed: the browser tests (tests/browser) will be skipped" >&2
  else
    echo "note: chromium is not installed and this script cannot install it (needs root or sudo):" \
         "the browser tests (tests/browser) will be skipped. Debian/Ubuntu: sudo apt-get install chromium" >&2
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating the virtualenv $VENV"
  if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
    rm -rf "$VENV"
    if command -v apt-get >/dev/null && as_root true; then
      as_root apt-get update -qq
      DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-venv >/dev/null
      "$PYTHON" -m venv "$VENV"
    else
      echo "error: '$PYTHON -m venv' failed: install python3-venv (sudo apt-get install python3-venv)" >&2
      exit 1
    fi
  fi
fi

# PAHO=oldest: the same pins, except paho-mqtt at the lowest version pyproject.toml allows (`make test`
# runs the session and role tests on it in a second venv: the range the kit declares is the range tested).
# The notebook tooling those tests do not use is left out (about 25 s less to install).
requirements=requirements.txt
if [ "${PAHO:-}" = oldest ]; then
  oldest=$(sed -n 's/.*"paho-mqtt>=\([0-9][0-9.]*\),.*/\1/p' pyproject.toml)
  if [ -z "$oldest" ]; then
    echo "error: pyproject.toml declares no \"paho-mqtt>=X.Y.Z,<N\" range to take the oldest paho from" >&2
    exit 1
  fi
  requirements="$VENV/requirements-paho-$oldest.txt"
  grep -Ev '^(jupyterlab|ipykernel|nbval|nbclient|nbformat)==' requirements.txt \
    | sed "s/^paho-mqtt==.*/paho-mqtt==$oldest/" > "$requirements.new"
  if cmp -s "$requirements.new" "$requirements"; then rm "$requirements.new"; else mv "$requirements.new" "$requirements"; fi
fi

stamp="$VENV/.a2a_nb-installed"
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$requirements" -nt "$stamp" ]; then
  echo "== installing the pinned requirements ($requirements) into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
  touch "$stamp"
fi
# JupyterLab settings of this venv (scripts/jupyterlab-overrides.json): save the widgets' state with
# the notebook, so a lesson saved after Run All and reopened later shows its widgets, not
# "Error displaying widget: model not found".
settings="$VENV/share/jupyter/lab/settings"
if [ -d "$VENV/share/jupyter/lab" ] && ! cmp -s scripts/jupyterlab-overrides.json "$settings/overrides.json"; then
  mkdir -p "$settings" && cp scripts/jupyterlab-overrides.json "$settings/overrides.json"
fi
echo "== ready: $("$VENV/bin/python" --version), paho-mqtt $("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("paho-mqtt"))'), mosquitto $( (mosquitto -h 2>/dev/null || /usr/sbin/mosquitto -h 2>/dev/null || true) | head -1 | awk '{print $3}')"
