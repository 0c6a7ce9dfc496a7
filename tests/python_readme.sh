#!/usr/bin/env bash
# The README's Python section, followed literally: in a copy of the source tree (its tracked
# files), the first ```sh block under "## Python" runs line by line in bash (a fresh venv,
# `pip install .`, the pytest run on the installed module), then the ```python example under
# it runs with that venv's python. Any failing line fails the test. Needs PyPI (pip).
#   tests/python_readme.sh SOURCE_ROOT
#       pip install . builds the library (minutes; scripts/time-pip-install times it cold)
#   tests/python_readme.sh SOURCE_ROOT EXTENSION BUILD_PYTHON
#       the `python_readme` test: `pip install .` installs a wheel packed from the extension a
#       meson build already made (python/wheel_from_build.py, which compiles nothing), and
#       the README's `python3` is the interpreter that extension was built for; every other
#       line runs as written
set -euo pipefail
src=$(cd "$1" && pwd)
extension=${2:-}
build_python=${3:-}
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
if [[ -n $extension ]]; then
  mkdir "$work/.prebuilt"
  wheel=$("$build_python" "$work/python/wheel_from_build.py" "$extension" "$work/.prebuilt")
  # python3 on the PATH: the base interpreter of the build's venv, whose ABI the wheel has
  ln -s "$("$build_python" -c 'import sys; print(sys._base_executable)')" "$work/.prebuilt/python3"
  export PATH="$work/.prebuilt:$PATH"
  grep -qE '^pip install \. ' <<<"$commands" || { echo "FAIL: no 'pip install .' line"; exit 1; }
  commands=$(sed -E "s|^pip install \. |pip install $wheel |" <<<"$commands")
  echo "== pip install . is served by $(basename "$wheel"), packed from the build's extension"
fi
cd "$work"
echo "== the README's commands:"
echo "$commands"
# -e: a failing command fails the test; each line as a user would type it, in one shell
# (so `. .venv/bin/activate` holds for the lines after it).
bash -euo pipefail -c "$commands"
echo "== the README's example:"
.venv/bin/python -c "$example"
echo "python_readme: the README's Python section works as written"
