#!/usr/bin/env bash
# Set-up shared by the make targets: a virtualenv with pinned requirements and the kit installed in
# it, and a Mosquitto broker binary (the kit starts its own broker process). Two sets:
#
#   A2A_SET=lab   `make lab` (the default): what the lessons need. Mosquitto (apt-get, when missing and
#                 run as root or with sudo) and requirements.txt.
#   A2A_SET=test  `make test`: the lab set, plus requirements-test.txt (pytest, nbval, mypy,
#                 playwright), Debian's chromium for tests/browser, and gcc with the Mosquitto headers
#                 for the broker-managed status plugin (both optional: without them the tests that need
#                 them are skipped, saying why).
#
#   A2A_INSTALLER=uv|pip  uv (from PyPI, the version pinned below, put into the venv by pip) installs
#                 the same pins in a fraction of pip's time. It is used unless pip is configured with
#                 an index or find-links of its own (uv does not read pip's configuration); pip is the
#                 fallback whenever uv cannot be installed or fails.
#   PAHO=oldest   the test set on the oldest paho-mqtt pyproject.toml allows (`make test-paho-oldest`).
#   --plan        print what this set would install, and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
SET=${A2A_SET:-lab}
UV_VERSION=0.13.8
START=$SECONDS

case "$SET" in
  lab) requirements=requirements.txt; apt_optional=() ;;
  test) requirements=requirements-test.txt; apt_optional=(plugin-headers chromium) ;;
  *) echo "error: A2A_SET must be lab or test, not '$SET'" >&2; exit 2 ;;
esac
if [ "${PAHO:-}" = oldest ]; then
  SET=test
  apt_optional=(plugin-headers)  # the session and role tests: no browser
  oldest=$(sed -n 's/.*"paho-mqtt>=\([0-9][0-9.]*\),.*/\1/p' pyproject.toml)
  if [ -z "$oldest" ]; then
    echo "error: pyproject.toml declares no \"paho-mqtt>=X.Y.Z,<N\" range to take the oldest paho from" >&2
    exit 1
  fi
  requirements="$VENV/requirements-paho-$oldest.txt"  # written below, once the venv exists
fi

if [ "${1:-}" = --plan ]; then
  echo "set: $SET"
  echo "apt-get, when missing: mosquitto$(for o in ${apt_optional[@]+"${apt_optional[@]}"}; do
    case $o in plugin-headers) printf ' gcc mosquitto-dev libmosquitto-dev' ;; chromium) printf ' chromium' ;; esac; done)"
  echo "requirements: $requirements"
  exit 0
fi

say() { echo "== [$((SECONDS - START)) s] $*"; }

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

can_apt() { command -v apt-get >/dev/null && as_root true; }

apt_updated=
apt_install() {  # apt_install PACKAGE...: quiet apt-get, after one `apt-get update`
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

have_mosquitto() {
  command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || [ -x /usr/local/sbin/mosquitto ] || [ -x /opt/homebrew/sbin/mosquitto ]
}

say "setting up the $SET set in $VENV (A2A_SET=lab: the lessons; A2A_SET=test: the lessons and the test tools)"
if ! have_mosquitto && [ -z "${A2A_BROKER_URL:-}" ]; then
  if can_apt; then
    say "installing mosquitto with apt-get (the MQTT broker the kit starts)"
    apt_install mosquitto
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

for optional in ${apt_optional[@]+"${apt_optional[@]}"}; do  # (bash 3.2 of macOS: no empty "${a[@]}")
  case $optional in
    plugin-headers)
      # The headers and compiler for the broker-managed status plugin (a2a_nb/mqtt/plugins/a2a_status.c,
      # built on first use). Without them the embedded broker runs without it, the probe reports
      # broker-managed status "not offered", and the tests that need it say why they are skipped.
      if { [ ! -f /usr/include/mosquitto_broker.h ] || [ ! -f /usr/include/mosquitto.h ]; } && can_apt; then
        say "installing gcc and the Mosquitto plugin headers with apt-get (tests of broker-managed status)"
        apt_install gcc mosquitto-dev libmosquitto-dev \
          || echo "note: the Mosquitto plugin headers could not be installed: broker-managed status stays off" >&2
      fi ;;
    chromium)
      # Debian's Chromium for the browser tests (tests/browser: JupyterLab driven by playwright).
      # Without it those tests are skipped, saying why. Playwright's own browser download is not used.
      if ! command -v chromium >/dev/null 2>&1; then
        if can_apt; then
          say "installing chromium with apt-get (for tests/browser; a minute or two)"
          apt_install chromium \
            || echo "note: 'apt-get install chromium' failed: the browser tests (tests/browser) will be skipped" >&2
        else
          echo "note: chromium is not installed and this script cannot install it (needs root or sudo):" \
               "the browser tests (tests/browser) will be skipped. Debian/Ubuntu: sudo apt-get install chromium" >&2
        fi
      fi ;;
  esac
done

if [ ! -x "$VENV/bin/python" ]; then
  say "creating the virtualenv $VENV"
  if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
    rm -rf "$VENV"
    if can_apt; then
      apt_install python3-venv
      "$PYTHON" -m venv "$VENV"
    else
      echo "error: '$PYTHON -m venv' failed: install python3-venv (sudo apt-get install python3-venv)" >&2
      exit 1
    fi
  fi
fi

# PAHO=oldest: the same pins, except paho-mqtt at the lowest version pyproject.toml allows (`make test`
# runs the session and role tests on it in a second venv: the range the kit declares is the range tested).
# The notebook and browser tooling those tests do not use is left out.
if [ "${PAHO:-}" = oldest ]; then
  cat requirements.txt requirements-test.txt \
    | grep -Ev '^(-r |(jupyterlab|ipykernel|nbval|nbclient|nbformat|jupytext|playwright|mypy)==)' \
    | sed "s/^paho-mqtt==.*/paho-mqtt==$oldest/" > "$requirements.new"
  if cmp -s "$requirements.new" "$requirements"; then rm "$requirements.new"; else mv "$requirements.new" "$requirements"; fi
fi

# uv does not read pip's configuration: where pip is told to use an index or wheel folder of its own,
# pip installs (uv would ignore that setting)
pip_configured() {
  [ -n "${PIP_INDEX_URL:-}${PIP_EXTRA_INDEX_URL:-}${PIP_FIND_LINKS:-}${PIP_NO_INDEX:-}" ] && return 0
  "$VENV/bin/python" -m pip config list 2>/dev/null | grep -Eq '(^|\.)(index-url|extra-index-url|find-links|no-index)='
}

installer=${A2A_INSTALLER:-}
choose_installer() {
  if [ -z "$installer" ]; then
    if pip_configured; then
      say "pip is configured with a package index of its own: installing with pip (uv would not read it)"
      installer=pip
    else
      installer=uv
    fi
  fi
  if [ "$installer" = uv ] && [ ! -x "$VENV/bin/uv" ]; then
    say "installing uv $UV_VERSION (a faster installer of the same pins, from PyPI) into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION" \
      || { echo "note: uv could not be installed: installing with pip instead" >&2; installer=pip; }
  fi
}

install_requirements() {  # install_requirements FILE: the pins, then the kit itself (editable)
  if [ "$installer" = uv ]; then
    if "$VENV/bin/uv" pip install --python "$VENV/bin/python" --compile-bytecode -r "$1" \
       && "$VENV/bin/uv" pip install --python "$VENV/bin/python" --no-deps -e .; then
      return 0
    fi
    echo "note: uv failed (see above): installing with pip instead" >&2
    installer=pip
  fi
  "$VENV/bin/python" -m pip install --disable-pip-version-check -r "$1"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-deps -e .
}

# One stamp per set: a test install holds the lab set too. A stamp older than a requirements file or
# pyproject.toml means install again (pins already satisfied take a second).
stamp="$VENV/.a2a_nb-installed-$SET"
current() {  # current STAMP: installed after every file that decides what it holds
  [ -f "$1" ] && ! [ requirements.txt -nt "$1" ] && ! [ pyproject.toml -nt "$1" ] \
    && ! [ "$requirements" -nt "$1" ] && { [ "$SET" = lab ] || ! [ requirements-test.txt -nt "$1" ]; }
}
if current "$stamp" || { [ "$SET" = lab ] && current "$VENV/.a2a_nb-installed-test"; }; then
  say "the $SET set is installed already ($requirements unchanged)"
else
  choose_installer
  what="the lessons' pinned packages ($requirements, about 130 with their dependencies)"
  if [ "$SET" = test ]; then what="the lessons' and the tests' pinned packages ($requirements, about 150 with their dependencies)"; fi
  say "installing $what and the kit into $VENV with $installer"
  install_requirements "$requirements"
  touch "$stamp"
  if [ "$SET" = test ]; then touch "$VENV/.a2a_nb-installed-lab"; fi
fi

# JupyterLab settings of this venv (scripts/jupyterlab-overrides.json): save the widgets' state with
# the notebook, so a lesson saved after Run All and reopened later shows its widgets, not
# "Error displaying widget: model not found"; open Markdown files (the glossary) rendered.
settings="$VENV/share/jupyter/lab/settings"
if [ -d "$VENV/share/jupyter/lab" ] && ! cmp -s scripts/jupyterlab-overrides.json "$settings/overrides.json"; then
  mkdir -p "$settings" && cp scripts/jupyterlab-overrides.json "$settings/overrides.json"
fi
say "ready: $("$VENV/bin/python" --version), paho-mqtt $("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("paho-mqtt"))'), mosquitto $( (mosquitto -h 2>/dev/null || /usr/sbin/mosquitto -h 2>/dev/null || true) | head -1 | awk '{print $3}')"
