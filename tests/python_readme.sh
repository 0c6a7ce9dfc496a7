#!/usr/bin/env bash
# The README's Python section, followed literally: in a copy of the source tree (its tracked
# files), the first ```sh block under "## Python" runs line by line in bash (a fresh venv,
# `pip install .`, the pytest run on the installed module), then the ```python example under
# it runs with that venv's python. Any failing line fails the test. Needs PyPI (pip).
#   tests/python_readme.sh SOURCE_ROOT
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -xf - -C "$work"
block() {  # block LANGUAGE: the first ```LANGUAGE block of the README's Python section
  python3 - "$work/README.md" "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## Python"):]
section = section[:section.index("\n## ", 1)]
print(re.search(r"```" + sys.argv[2] + r"\n(.*?)```", section, re.S).group(1))
PY
}
commands=$(block sh)
example=$(block python)
cd "$work"
echo "== the README's commands:"
echo "$commands"
# -e: a failing command fails the test; each line as a user would type it, in one shell
# (so `. .venv/bin/activate` holds for the lines after it).
bash -euo pipefail -c "$commands"
echo "== the README's example:"
.venv/bin/python -c "$example"
echo "python_readme: the README's Python section works as written"
