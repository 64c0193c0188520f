#!/usr/bin/env bash
# The runtime as a deployed program gets it: `cmake --install` into a fresh
# prefix, a C program built against it with pkg-config alone, and an artifact
# of the tests run with it. Also checks that the installed library needs
# nothing beyond libc, libdl, pthreads, libm, cJSON and zlib, and that the
# compiler's side (artifact writer, .npy files) is not in it.
#   test_install.sh BUILD_DIR WORK_DIR LIBDIR MAKE_TEST_ARTIFACT   (env CC, CMAKE)
set -euo pipefail
build=$1 work=$2 libdir=$3 make_artifact=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

"$CMAKE" --install "$build" --prefix "$prefix" >"$work/install.log"
lib=$prefix/$libdir/libloomrt.so
for f in "$lib" "$prefix/include/loom/loom_runtime.h" "$prefix/include/loom/loom_status.h" \
         "$prefix/$libdir/pkgconfig/loomrt.pc"; do
  [ -e "$f" ] || { echo "test_install: $f was not installed" >&2; exit 1; }
done

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for n in $needed; do
  case $n in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|libcjson.so.*|libz.so.*|ld-linux*) ;;
    *) echo "test_install: libloomrt needs $n (allowed: libc, libm, libdl, pthreads, cJSON, zlib)" >&2; exit 1 ;;
  esac
done
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}') # nm's failure ends the test (pipefail)
extra=$(printf '%s\n' "$symbols" | grep -E '^(artifact_write|npy_|tensor_fill_|atomic_file_)' || true)
if [ -n "$extra" ]; then
  echo "test_install: libloomrt exports compiler/tool symbols: $extra" >&2
  exit 1
fi

weights=$("$make_artifact" "$work")
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
# shellcheck disable=SC2046 # pkg-config's flags are separate words
"$CC" -std=c11 -Wall -Wextra -Werror -o "$work/model_runner" "$here/model_runner.c" $(pkg-config --cflags --libs loomrt)
# shellcheck disable=SC2086 # six weights, six arguments
LD_LIBRARY_PATH="$prefix/$libdir" "$work/model_runner" "$work/model.loom" $weights
