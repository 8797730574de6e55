#!/usr/bin/env bash
# End to end (about 2 CPU minutes) on a tiny synthetic world through `wxcast demo` with the configs below: synth (T31
# dynamics, which unlike T21 change enough in 24 h for persistence to be beatable; written on
# 33x64; 2000-01-01 .. 2002-01-16) -> ingest through the NetCDF reader (statistics and climatology
# over the training months) -> a short FourCastNet training on Mar-Dec 2000 (validation 2001) ->
# 72-hour rollouts from every day of 1-13 Jan 2002 (held out: never read by training) -> scores.
# Asserts on the numbers in scores.json: the model's 24 h latitude-weighted RMSE of z500 beats
# persistence's, every score is finite, persistence's RMSE grows with lead and its ACC is below 1;
# and on the products: the forecast file read back with ncdump (13 times, lead 0 = the archive
# record), the map and plot PNGs. Usage: e2e_tiny.sh WXCAST SRCDIR
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_e2e.XXXXXX); trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
pass=0; fail=0
ok() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
mkdir "$T/cfg"; cd "$T/cfg"
cat > synth.yaml <<'Y'
truncation: 31
nlat: 33
nlon: 64
start_year: 2000
days: 747
spin_up_days: 60
variables: [z500, t850, u500, v500]
formats: [netcdf]
Y
cat > recipe.yaml <<'Y'
sources: ["world/*.nc"]
variables:
  - {name: z500, param: z, level: 500}
  - {name: t850, param: t, level: 850}
  - {name: u500, param: u, level: 500}
  - {name: v500, param: v, level: 500}
dates: {start: "2000-03-01T00:00", end: "2002-01-16T18:00", step: "6h"}
drop_south_pole: true
statistics: {start: "2000-03-01T00:00", end: "2000-12-31T18:00"}
climatology: true
output: archive
Y
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
cat > train.yaml <<'Y'
model: model.yaml
data: {archive: archive, train_years: [2000, 2000], valid_years: [2001, 2001], test_years: [2002, 2002]}
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
cat > demo.yaml <<'Y'
init_every: 24h
lead_steps: 12
batch: 13
map_channel: z500
map_lead_hours: 24
finetune: false
Y
cd "$T"
"$W" demo --output "$T/d" --configs "$T/cfg" > out.txt 2> err.txt
rc=$?
ok "demo exits 0 (rc $rc: $(tail -2 err.txt))" '[ $rc -eq 0 ]'
cat out.txt | sed -n '/^Scores/,$p'
D="$T/d"
# scores.json -> "model variable lead rmse acc" lines (the file is one JSON object, one score each).
tr '{' '\n' < "$D/scores.json" | sed -n 's/.*"model":"\([a-z]*\)","variable":"\([a-z0-9]*\)".*"lead_hours":\([0-9.]*\),"n":\([0-9]*\),"rmse":\([^,]*\),.*"acc":\([^}]*\)}*.*/\1 \2 \3 \4 \5 \6/p' > s.txt
get() { awk -v m="$1" -v v="$2" -v l="$3" -v c="$4" '$1==m && $2==v && $3==l {print $c}' s.txt; }
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
section() { awk -v v="$1" '$0 ~ "^ "v" =" {on=1} on {print} on && /;/ {exit}'; }
# The archive dump names the channel (z500); the product puts z on a level axis (only 500 here).
lead0() { ncdump -p 9 -v "$2" "$1" | section "$2" | tr -d ' ;\n' | sed "s/^$2=//" | tr ',' '\n' | head -n 2048; }
ok "lead 0 = archive record" '[ -n "$(lead0 "$T/a.nc" z500)" ] && [ "$(lead0 "$F" z)" = "$(lead0 "$T/a.nc" z500)" ]'
ok "map and plots written" '[ -s "$D/z500_forecast_vs_truth.png" ] && [ -s "$D/rmse_z500.png" ] && [ -s "$D/acc_z500.png" ]'
ok "PNG signature" '[ "$(head -c 4 "$D/z500_forecast_vs_truth.png" | tail -c 3)" = "PNG" ]'
ok "printed table has z500 at 24 h" 'grep -q "^z500 *24h" out.txt'
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
