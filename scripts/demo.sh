#!/usr/bin/env bash
# The README's first command: installs what it needs, builds the runtime, and runs a short
# local PPU training job (configs/demo.yaml: 4 ranks on the built-in synthetic corpus), then
# prints loss, perplexity (next to the corpus's exact floor), memory and FLOPs savings.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build -DPPU_BUILD_OPERATOR=OFF -DPPU_BUILD_TESTS=OFF
out=$(mktemp -d)
./build/bin/ppu-launch --config configs/demo.yaml --summary-dir "$out" "$@"
python3 - "$out/rank-0.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
mb = lambda b: b / 2**20
st, full = s["state_bytes"], s["state_bytes_full_training"]
print()
print(f"PPU demo: {s['method']} {s['slicing']['mode']} N={s['slicing']['slices']}, {s['world_size']} ranks, {s['steps']} steps, {s['outer_rounds']} outer rounds")
print(f"  final train loss     {s['final_loss']:.4f}")
print(f"  eval loss            {s['eval_loss']:.4f}   perplexity {s['eval_perplexity']:.3f} (best achievable {s.get('eval_perplexity_floor', float('nan')):.3f})")
print(f"  trainable per rank   {s['trainable_params']:,} of {s['total_params']:,} parameters ({100*s['trainable_params']/s['total_params']:.1f}%)")
print(f"  state memory / rank  {mb(st['total']):.2f} MiB vs {mb(full['total']):.2f} MiB full training ({100*(1-st['total']/full['total']):.1f}% saved)")
for k in ("weights", "gradients", "inner_optimizer", "outer_optimizer", "offloaded"):
    print(f"    {k:<18} {mb(st[k]):8.2f} MiB  (full {mb(full[k]):8.2f} MiB)")
print(f"  FLOPs executed       {s['flops_executed']:.3e} vs {s['flops_full_backward']:.3e} with a full backward ({100*s['flops_saved_fraction']:.1f}% saved)")
print(f"  network per rank     {s['bytes_sent']:.3e} bytes sent, {s['bytes_received']:.3e} received in {s['outer_rounds']} rounds ({s['network_wait_seconds']:.2f} s waiting); final checksum {s['param_checksum']}")
PY
