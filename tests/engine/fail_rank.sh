#!/usr/bin/env bash
# Test double for ppu-launch's failure handling: rank $FAIL_RANK exits 7 after a second,
# every other rank runs the real ppu-train ($PPU_TRAIN) with the given arguments.
if [[ "$RANK" == "$FAIL_RANK" ]]; then
  echo "rank $RANK failing on purpose"
  sleep 1
  exit 7
fi
exec "$PPU_TRAIN" "$@"
