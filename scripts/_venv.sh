# Shared by scripts/demo, scripts/test and scripts/bench: make .venv (once) and install croft into it.
# Usage: . scripts/_venv.sh EXTRAS   (EXTRAS e.g. "dev", or "" for none: always pass it, since a sourced
# script otherwise sees its caller's arguments)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CROFT_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "croft: creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi
_extras="${1:-}"
_stamp="$VENV/.croft-installed${_extras:+-$_extras}"
_fresh() { [ -f "$1" ] && ! [ "$ROOT/pyproject.toml" -nt "$1" ]; }
# croft with the dev extras installed is croft too: `scripts/demo` after `scripts/test` installs nothing.
if ! _fresh "$_stamp" && ! { [ -z "$_extras" ] && _fresh "$VENV/.croft-installed-dev"; }; then
  echo "croft: installing croft${_extras:+[$_extras]} into $VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT${_extras:+[$_extras]}"
  touch "$_stamp"
fi
export PATH="$VENV/bin:$PATH"
