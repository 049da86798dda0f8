#!/usr/bin/env bash
# Builds the study's text dataset reproducibly; no network beyond Debian's package archive.
#   corpus.sh --full  OUT   English prose from Debian documentation packages (PKGS below):
#                           `apt-get download` + `dpkg-deb -x` into OUT/debs (nothing is
#                           installed), cleaned to prose by clean_text.py, tokenised by
#                           `ppu-data text --vocab 2048` into OUT/data (train/val shards; each
#                           source file is one document, split train/val at random, seed 0).
#   corpus.sh --small OUT   the same pipeline on ../shared/data/tinyshakespeare.txt (vocab 1024).
# OUT/MANIFEST records every package's name, version and .deb sha256, the cleaned text's sha256
# and the token counts. A finished OUT (OUT/data/meta.json present) is reused.
# Env: PPU_BUILD (default ./build) for ppu-data; PPU_SHAKESPEARE overrides the small input.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${PPU_BUILD:-$ROOT/build}
PKGS=(python3.11-doc perl-doc perl-modules-5.36 postgresql-doc-15 git-doc) # pinned names; versions go to MANIFEST

usage() {
  echo "usage: corpus.sh --full|--small OUT_DIR" >&2
  exit 2
}
[[ $# -eq 2 ]] || usage
MODE=$1
OUT=$2
[[ $MODE == --full || $MODE == --small ]] || {
  echo "corpus.sh: unknown mode '$MODE' (use --full or --small)" >&2
  exit 2
}
PPU_DATA=$BUILD/bin/ppu-data
[[ -x $PPU_DATA ]] || {
  echo "corpus.sh: $PPU_DATA not built (set PPU_BUILD)" >&2
  exit 2
}
if [[ -f $OUT/data/meta.json ]]; then
  echo "corpus: $OUT/data already built"
  exit 0
fi
mkdir -p "$OUT/text"
: >"$OUT/MANIFEST"

if [[ $MODE == --small ]]; then
  SRC=${PPU_SHAKESPEARE:-$ROOT/../shared/data/tinyshakespeare.txt}
  [[ -f $SRC ]] || {
    echo "corpus.sh: small input $SRC not found (set PPU_SHAKESPEARE)" >&2
    exit 2
  }
  cp "$SRC" "$OUT/text/shakespeare.txt"
  echo "input tinyshakespeare.txt sha256 $(sha256sum <"$SRC" | cut -d' ' -f1)" >>"$OUT/MANIFEST"
  VOCAB=1024
else
  mkdir -p "$OUT/debs"
  (cd "$OUT/debs" && for p in "${PKGS[@]}"; do ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p"; done)
  for p in "${PKGS[@]}"; do
    debs=("$OUT/debs/${p}"_*.deb)
    deb="${debs[0]}"
    rm -rf "$OUT/debs/x-$p"
    dpkg-deb -x "$deb" "$OUT/debs/x-$p"
    echo "package $p $(dpkg-deb -f "$deb" Version) $(basename "$deb") sha256 $(sha256sum <"$deb" | cut -d' ' -f1)" >>"$OUT/MANIFEST"
  done
  export LC_ALL=C
  # clean FORMAT OUT FIND_ARGS...: the files `find FIND_ARGS` lists, sorted, as one text.
  clean() {
    local format="$1" out="$2" files
    shift 2
    mapfile -t files < <(find "$@" | sort)
    python3 "$HERE/clean_text.py" --format "$format" --out "$out" "${files[@]}"
  }
  clean rst "$OUT/text/python-doc.txt" "$OUT/debs/x-python3.11-doc" -path '*_sources*' -name '*.rst.txt'
  clean pod "$OUT/text/perl-doc.txt" "$OUT/debs/x-perl-doc" -name '*.pod'
  clean pod "$OUT/text/perl-modules.txt" "$OUT/debs/x-perl-modules-5.36" \( -name '*.pm' -o -name '*.pod' \)
  clean html "$OUT/text/postgresql-doc.txt" "$OUT/debs/x-postgresql-doc-15" -name '*.html'
  clean html "$OUT/text/git-doc.txt" "$OUT/debs/x-git-doc" -name '*.html'
  VOCAB=2048
fi
for f in "$OUT"/text/*.txt; do
  echo "text $(basename "$f") bytes $(stat -c %s "$f") sha256 $(sha256sum <"$f" | cut -d' ' -f1)" >>"$OUT/MANIFEST"
done
inputs=()
for f in "$OUT"/text/*.txt; do inputs+=(--input "$f"); done
"$PPU_DATA" text "${inputs[@]}" --out "$OUT/data" --vocab "$VOCAB" --val-fraction 0.05 --seed 0 | tee -a "$OUT/MANIFEST"
python3 - "$OUT/data/meta.json" >>"$OUT/MANIFEST" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
# contract: not a summary: ppu-data's meta.json
print(f"tokens train {m['train_tokens']} val {m['val_tokens']} vocab {m['vocab']}")
EOF
cat "$OUT/MANIFEST"
