#!/usr/bin/env bash
# Runs the Python tests (python/tests) in a virtual environment under build/python-venv with the
# pinned packages of python/requirements-report.txt. The report's tests open pages in Debian's
# headless chromium through chromium-driver; run as root on Debian, this installs both (and
# python3-venv) when missing. Arguments go to pytest (e.g. -k report, -x).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
venv=${FG_PYTHON_VENV:-$root/build/python-venv}
req=$here/requirements-report.txt

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "run_tests.sh: installing $* with apt-get" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "run_tests.sh: needs the Debian packages $*: sudo apt-get install $*" >&2
    exit 1
  fi
}

python=${PYTHON:-python3}
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then apt_install python3-venv; fi
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  apt_install chromium chromium-driver
fi

# (Re)made when the pinned requirements change.
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/.requirements"; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$req"
  cp "$req" "$venv/.requirements"
fi

export FG_REQUIRE_BROWSER=1  # a missing browser fails the report's tests instead of skipping them
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
cd "$root"
exec "$venv/bin/python" -m pytest -q -o cache_dir="$root/build/pytest-cache" "$here/tests" "$@"
