#!/usr/bin/env bash
# Installs the built library into a temporary root, then compiles and runs the out-of-tree
# example against it through pkg-config, as a research prototype would.
set -euo pipefail
build_dir=$1
source_dir=$2
root=$(mktemp -d /tmp/ringgrad-install.XXXXXX)
trap 'rm -rf "$root"' EXIT
meson install -C "$build_dir" --no-rebuild --destdir "$root" >/dev/null
pc=$(find "$root" -name ringgrad.pc | head -1)
[[ -n $pc ]] || { echo "ringgrad.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs ringgrad)
c++ -std=c++20 -O1 "$source_dir/examples/consumer/main.cpp" $flags -fopenmp -o "$root/consumer"
libdir=$(dirname "$(find "$root" -name 'libringgrad.so' | head -1)")
LD_LIBRARY_PATH=$libdir "$root/consumer"
echo "install: consumer built against the installed library and ran"
