#!/usr/bin/env bash
# End to end (about 2 CPU minutes) on a tiny synthetic world through `wxcast demo` with the configs of
# lib/tiny_e2e.sh (shared with e2e_tiny_gc.sh) and the FourCastNet below: synth (T31
# dynamics, which unlike T21 change enough in 24 h for persistence to be beatable; written on
# 33x64; 2000-01-01 .. 2002-01-16) -> ingest through the NetCDF reader (statistics and climatology
# over the training months) -> a short FourCastNet training on Mar-Dec 2000 (validation 2001) ->
# 72-hour rollouts from every day of 1-13 Jan 2002 (held out: never read by training) -> scores.
# Asserts on the numbers in scores.json: the model's 24 h latitude-weighted RMSE of z500 beats
# persistence's, every score is finite, persistence's RMSE grows with lead and its ACC is below 1;
# and on the products: the forecast file read back with ncdump (13 times, lead 0 = the archive
# record), the map and plot PNGs. Usage: e2e_tiny.sh WXCAST SRCDIR (WX_E2E_DEVICE=cuda: train on the GPU)
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_e2e.XXXXXX); trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$2/tests/cli/lib/tiny_e2e.sh" # cfg/: synth.yaml, recipe.yaml, demo.yaml; the scores helpers
cd cfg
cat > model.yaml <<'Y'
type: fourcastnet
img_size: [32, 64]
patch_size: 4
in_channels: 4
out_channels: 4
embed_dim: 128
depth: 2
num_blocks: 8
Y
cat > train.yaml <<Y
model: model.yaml
data: {archive: archive, $tiny_e2e_data}
seed: 0
threads: 1
checkpoint_dir: checkpoints
validation: {leads: [4], max_samples: 8}
pretrain:
  steps: 1400
  batch_size: 8
  optimizer: {lr: 1.0e-3, betas: [0.9, 0.95], weight_decay: 0.01, warmup: 50, lr_min: 1.0e-5, grad_clip: 1.0}
  loss: {type: lat_weighted_mse}
Y
# WX_E2E_DEVICE=cuda (scripts/device_check.sh on a GPU machine): the same run trained on the GPU,
# in WX_E2E_PRECISION (default fp32); the rollouts and scores stay on the CPU.
if [ -n "${WX_E2E_DEVICE:-}" ]; then
    printf 'device: %s\nprecision: %s\n' "$WX_E2E_DEVICE" "${WX_E2E_PRECISION:-fp32}" >>train.yaml
fi
cd "$T"
"$W" demo --output "$T/d" --configs "$T/cfg" > out.txt 2> err.txt
rc=$?
ok "demo exits 0 (rc $rc: $(tail -2 err.txt))" '[ $rc -eq 0 ]'
ok "trained on ${WX_E2E_DEVICE:-cpu}" 'grep -q "training pretrain on ${WX_E2E_DEVICE:-cpu}" err.txt'
cat out.txt | sed -n '/^Scores/,$p'
D="$T/d"
tiny_e2e_scores s.txt "$D/scores.json"
get() { tiny_e2e_get s.txt "$@"; }
ok "scores.json has 3 models x 4 variables x 12 leads" '[ $(wc -l < s.txt) -eq 144 ]'
ok "13 initial times per score" '[ "$(get fourcastnet z500 24 4)" = "13" ]'
m24=$(get fourcastnet z500 24 5); p24=$(get persistence z500 24 5); c24=$(get climatology z500 24 5)
p72=$(get persistence z500 72 5)
echo "z500 RMSE at 24 h: model $m24, persistence $p24, climatology $c24; persistence at 72 h $p72"
ok "model beats persistence on z500 at 24 h ($m24 < $p24)" 'awk -v a="$m24" -v b="$p24" "BEGIN{exit !(a+0 > 0 && a+0 < b+0)}"'
ok "persistence error grows 24 h -> 72 h" 'awk -v a="$p24" -v b="$p72" "BEGIN{exit !(a+0 > 0 && b+0 > a+0)}"'
ok "persistence ACC at 24 h in (0, 1)" 'awk -v a="$(get persistence z500 24 6)" "BEGIN{exit !(a+0 > 0 && a+0 < 1)}"'
ok "no NaN/null RMSE" '! awk "\$5 !~ /^[0-9.e+-]+\$/" s.txt | grep -q .'
F=$(ls "$D"/forecast_*.nc 2>/dev/null | head -1)
ok "forecast file from the first held-out initial time" '[ "$(basename "$F")" = "forecast_2002-01-01T00-00.nc" ]'
ok "13 times in it" 'ncdump -h "$F" | grep -q "time = UNLIMITED ; // (13 currently)"'
"$W" -q dump "$D/archive" --vars z500 --output "$T/a.nc" --start 2002-01-01T00:00 --end 2002-01-01T00:00 >/dev/null
# The archive dump names the channel (z500); the product puts z on a level axis (only 500 here).
lead0() { tiny_e2e_values "$@"; }
ok "lead 0 = archive record" '[ -n "$(lead0 "$T/a.nc" z500)" ] && [ "$(lead0 "$F" z)" = "$(lead0 "$T/a.nc" z500)" ]'
ok "map and plots written" '[ -s "$D/z500_forecast_vs_truth.png" ] && [ -s "$D/rmse_z500.png" ] && [ -s "$D/acc_z500.png" ]'
ok "PNG signature" '[ "$(head -c 4 "$D/z500_forecast_vs_truth.png" | tail -c 3)" = "PNG" ]'
ok "printed table has z500 at 24 h" 'grep -q "^z500 *24h" out.txt'
checks_summary
