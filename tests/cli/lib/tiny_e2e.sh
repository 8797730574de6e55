# Shared set-up of the end-to-end demo tests (e2e_tiny.sh: FourCastNet, e2e_tiny_gc.sh: GraphCast):
# writes into ./cfg the demo configs of a tiny synthetic world and defines the helpers that read
# the demo's results. Source it in the test's temp folder after setting `ok`-style counters.
#
# World: T31 dynamics (which unlike T21 change enough in 24 h for persistence to be beatable),
# written on 33x64, 2000-01-01 .. 2002-01-16, z500 t850 u500 v500 (and the static land-sea mask and
# surface geopotential synth always writes). Archives from 2000-03-01 (after the spin-up's
# transient) with statistics and climatology over the training months of 2000:
#   recipe.yaml           FourCastNet's: the south-pole row dropped (32 rows: patches divide 32)
#   recipe_graphcast.yaml GraphCast's: both poles kept (33 rows) plus the static fields
# demo.yaml: 72-hour rollouts (12 steps) from every day of 1-13 Jan 2002 (held out: the train
# configs name 2000 for training, 2001 for validation, 2002 as the test year).
mkdir -p cfg
cat > cfg/synth.yaml <<'Y'
truncation: 31
nlat: 33
nlon: 64
start_year: 2000
days: 747
spin_up_days: 60
variables: [z500, t850, u500, v500]
formats: [netcdf]
Y
tiny_e2e_vars='  - {name: z500, param: z, level: 500}
  - {name: t850, param: t, level: 850}
  - {name: u500, param: u, level: 500}
  - {name: v500, param: v, level: 500}'
tiny_e2e_rest='dates: {start: "2000-03-01T00:00", end: "2002-01-16T18:00", step: "6h"}
statistics: {start: "2000-03-01T00:00", end: "2000-12-31T18:00"}
climatology: true'
cat > cfg/recipe.yaml <<Y
sources: ["world/*.nc"]
variables:
$tiny_e2e_vars
$tiny_e2e_rest
drop_south_pole: true
output: archive
Y
cat > cfg/recipe_graphcast.yaml <<Y
sources: ["world/*.nc"]
variables:
$tiny_e2e_vars
  - {name: lsm, param: lsm}
  - {name: zs, param: z}
$tiny_e2e_rest
output: archive_graphcast
Y
cat > cfg/demo.yaml <<'Y'
init_every: 24h
lead_steps: 12
batch: 13
map_channel: z500
map_lead_hours: 24
finetune: false
Y
# The data split of every train config of these tests: data: {archive: DIR, $tiny_e2e_data}
tiny_e2e_data='train_years: [2000, 2000], valid_years: [2001, 2001], test_years: [2002, 2002]'

# scores.json (one JSON object, one score each) -> "model variable lead n rmse acc" lines in $1.
tiny_e2e_scores() {
    tr '{' '\n' < "$2" | sed -n 's/.*"model":"\([a-z]*\)","variable":"\([a-z0-9]*\)".*"lead_hours":\([0-9.]*\),"n":\([0-9]*\),"rmse":\([^,]*\),.*"acc":\([^}]*\)}*.*/\1 \2 \3 \4 \5 \6/p' > "$1"
}
# tiny_e2e_get FILE MODEL VARIABLE LEAD COLUMN
tiny_e2e_get() { awk -v m="$2" -v v="$3" -v l="$4" -v c="$5" '$1==m && $2==v && $3==l {print $c}' "$1"; }
# 2048 values of variable $2 in NetCDF file $1 (ncdump, 9 digits) from value number $3 (default 1:
# the first time's first 2048 points).
tiny_e2e_values() {
    ncdump -p 9 -v "$2" "$1" | awk -v v="$2" '$0 ~ "^ "v" =" {on=1} on {print} on && /;/ {exit}' |
        tr -d ' ;\n' | sed "s/^$2=//" | tr ',' '\n' | tail -n +"${3:-1}" | head -n 2048
}
