#!/usr/bin/env bash
# Installs the built library into a temporary root, then compiles the out-of-tree example
# through pkg-config, as a research prototype would, links it once against the shared and
# once against the static library, and runs both.
# usage: check_install.sh BUILD_DIR SOURCE_DIR [CXXFLAGS...]
#   CXXFLAGS: extra compile and link flags for the consumer; the sanitizer build passes its
#   -fsanitize flags, so the consumer carries the same runtime as the library it links.
set -euo pipefail
build_dir=$1
source_dir=$2
shift 2
extra_flags=("$@")
root=$(mktemp -d /tmp/ringgrad-install.XXXXXX)
trap 'rm -rf "$root"' EXIT
meson install -C "$build_dir" --no-rebuild --destdir "$root" >/dev/null
pc=$(find "$root" -name ringgrad.pc | head -1)
[[ -n $pc ]] || { echo "install: ringgrad.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
shared_lib=$(find "$root" -name 'libringgrad.so' | head -1)
static_lib=$(find "$root" -name 'libringgrad.a' | head -1)
[[ -n $shared_lib ]] || { echo "install: libringgrad.so was not installed"; exit 1; }
[[ -n $static_lib ]] || { echo "install: libringgrad.a was not installed"; exit 1; }

c++ -std=c++20 -O1 "${extra_flags[@]}" $(pkg-config --cflags ringgrad) \
  -c "$source_dir/examples/consumer/main.cpp" -o "$root/consumer.o"

# Shared: the usual pkg-config line.
c++ "${extra_flags[@]}" "$root/consumer.o" $(pkg-config --libs ringgrad) -fopenmp \
  -o "$root/consumer-shared"
LD_LIBRARY_PATH=$(dirname "$shared_lib") "$root/consumer-shared"
echo "install: consumer built against the installed shared library and ran"

# Static: the archive by name, with the libraries it needs (Libs.private).
static_libs=$(pkg-config --static --libs ringgrad | sed 's/-lringgrad\b/-l:libringgrad.a/')
c++ "${extra_flags[@]}" "$root/consumer.o" $static_libs -fopenmp -o "$root/consumer-static"
if readelf -d "$root/consumer-static" | grep -q 'NEEDED.*libringgrad'; then
  echo "install: the static consumer still needs libringgrad.so"
  exit 1
fi
"$root/consumer-static"
echo "install: consumer built against the installed static library and ran"
