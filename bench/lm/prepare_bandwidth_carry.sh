#!/usr/bin/env bash
# Gathers what bench/lm/decode_bandwidth_h200.sh needs on the H200 machine
# into one folder for the device tool's `carry` (an ignored path of the
# tree, e.g. build/bandwidth-carry): nuvec of a release build (BUILD,
# default build/decode-rel), the shared libraries it needs that the machine
# lacks, the scripts, and the commit it was built from.
#   BUILD=build/decode-rel prepare_bandwidth_carry.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build/decode-rel}"
out="$1"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "$build/tools/nuvec" "$out/bin/"
for lib in $(ldd "$out/bin/nuvec" | awk '/libfmt|libpcre2|libutf8proc|libsentencepiece|libz\./ {print $3}' | sort -u); do
  cp -L "$lib" "$out/lib/"
done
strip --strip-debug "$out/bin/nuvec" 2>/dev/null || true
cp "$root/bench/lm/decode_bandwidth_h200.sh" "$root/bench/lm/decode_bandwidth_table.py" \
  "$root/bench/lm/make_decode_gguf.py" "$root/bench/gguf/make_random_gguf.py" "$out/"
git -C "$root" rev-parse --short HEAD > "$out/COMMIT"
du -sh "$out"
