#!/usr/bin/env bash
# CLI basics: help, info, JSON output, model configs, and the usage-error contract (exit 2 and
# exactly one "wxcast: error:" line naming the key and line). Usage: cli_basics.sh WXCAST SRCDIR
set -u
W="$1"
SRC="$2"
PY=/usr/bin/python3
T=$(mktemp -d /tmp/wx_cli_basics.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh" # check, run (sets rc, out, err), usage_error

run --help
[ "$rc" -eq 0 ] && grep -q '^  info ' "$T/out"; check "wxcast --help exits 0 and lists info" $?

# Every command in the table answers --help with its usage (exit 0).
for cmd in $(sed -n '/^commands:/,/^$/p' "$T/out" | awk 'NF && $1 != "commands:" {print $1}'); do
    run "$cmd" --help
    [ "$rc" -eq 0 ] && grep -q "^usage: wxcast $cmd" "$T/out"; check "wxcast $cmd --help" $?
done
run help info
[ "$rc" -eq 0 ] && grep -q "^usage: wxcast info" "$T/out"; check "wxcast help info" $?

run info
[ "$rc" -eq 0 ]; check "info exits 0" $?
for lib in eccodes netCDF FFTW OpenBLAS libyaml libpng zlib; do
    grep -qE "^  $lib +[0-9a-zA-Z]" "$T/out"; check "info shows $lib version" $?
done
# The versions are the libraries' own: compare with their tools where they exist.
if command -v codes_info >/dev/null; then
    v=$(codes_info -v 2>/dev/null | head -1)
    grep -qF "eccodes   $v" "$T/out"; check "eccodes version matches codes_info -v ($v)" $?
fi
if command -v nc-config >/dev/null; then
    v=$(nc-config --version | awk '{print $2}')
    grep -qE "^  netCDF +$v" "$T/out"; check "netCDF version matches nc-config ($v)" $?
fi
grep -q "^ops:" "$T/out" && grep -q "linear" "$T/out"; check "info lists ops" $?

run info --json
[ "$rc" -eq 0 ] && echo "$out" | $PY -m json.tool >/dev/null; check "info --json is valid JSON" $?
echo "$out" | $PY -c 'import json,sys; d=json.load(sys.stdin); l=d["libraries"]
assert all(l[k] for k in ("eccodes","netcdf","fftw","openblas","libyaml","libpng","zlib")), l
assert "linear" in d["ops"] and d["openmp_threads"] >= 1' 2>/dev/null
check "info --json has library versions and ops" $?
# wxcast stops OpenBLAS's own thread pool as it starts (its GEMMs run inside the OpenMP team;
# src/cli/main.c), unless the user chose a count.
obt() { echo "$out" | $PY -c 'import json,sys; print(json.load(sys.stdin)["libraries"]["openblas_threads"])' 2>/dev/null; }
n=$(env -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS "$W" info --json 2>/dev/null | { out=$(cat); obt; })
[ "$n" = 1 ]; check "OpenBLAS runs one thread by default (got '$n')" $?
n=$(OPENBLAS_NUM_THREADS=2 "$W" info --json 2>/dev/null | { out=$(cat); obt; })
[ "$n" = 2 ]; check "OPENBLAS_NUM_THREADS=2 set by the user is kept (got '$n')" $?

run info --model "$SRC/configs/model/fourcastnet_paper.yaml"
[ "$rc" -eq 0 ] && grep -qE "74,691,840|74691840" "$T/out"
check "paper config has 74,691,840 parameters (published count)" $?
run info --model "$SRC/configs/model/fourcastnet_paper.yaml" --json
echo "$out" | $PY -c 'import json,sys; assert json.load(sys.stdin)["parameters"] == 74691840' 2>/dev/null
check "paper config --json parameters" $?
run info --model "$SRC/configs/model/fourcastnet_tiny.yaml"
[ "$rc" -eq 0 ]; check "tiny config loads" $?

# The count formula against PyTorch modules with the NVlabs AFNONet shapes, on a config where
# every term differs (hidden_size_factor 2, fractional mlp_ratio, no unused norm).
if $PY -c 'import torch' 2>/dev/null; then
    printf 'type: fourcastnet\nimg_size: [24, 48]\npatch_size: 6\nin_channels: 3\nout_channels: 5\n'\
'embed_dim: 48\ndepth: 3\nmlp_ratio: 2.7\nnum_blocks: 3\nhidden_size_factor: 2\ncount_unused_norm: false\n' >"$T/odd.yaml"
    run info --model "$T/odd.yaml" --json
    got=$(echo "$out" | $PY -c 'import json,sys; print(json.load(sys.stdin)["parameters"])' 2>/dev/null)
    want=$($PY - <<'PYEOF'
import torch, torch.nn as nn
H, W, p, cin, cout, E, depth, ratio, nb, hsf = 24, 48, 6, 3, 5, 48, 3, 2.7, 3, 2
bs = E // nb
class AFNO2D(nn.Module):  # networks/afnonet.py AFNO2D parameters
    def __init__(s):
        super().__init__()
        s.w1 = nn.Parameter(torch.zeros(2, nb, bs, bs * hsf)); s.b1 = nn.Parameter(torch.zeros(2, nb, bs * hsf))
        s.w2 = nn.Parameter(torch.zeros(2, nb, bs * hsf, bs)); s.b2 = nn.Parameter(torch.zeros(2, nb, bs))
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        hidden = int(E * ratio)
        s.norm1, s.filter, s.norm2 = nn.LayerNorm(E), AFNO2D(), nn.LayerNorm(E)
        s.mlp = nn.Sequential(nn.Linear(E, hidden), nn.GELU(), nn.Linear(hidden, E))
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.patch_embed = nn.Conv2d(cin, E, kernel_size=p, stride=p)
        s.pos_embed = nn.Parameter(torch.zeros(1, (H // p) * (W // p), E))
        s.blocks = nn.ModuleList([Block() for _ in range(depth)])
        s.head = nn.Linear(E, cout * p * p, bias=False)
print(sum(t.numel() for t in Net().parameters()))
PYEOF
)
    [ -n "$got" ] && [ "$got" = "$want" ]; check "odd config count $got equals PyTorch module count $want" $?
else
    echo "note: no torch at $PY; PyTorch count check skipped"
fi

# --print-config output is a config that gives the same model.
for cfg in fourcastnet_paper fourcastnet_tiny; do
    run info --model "$SRC/configs/model/$cfg.yaml"
    want=$(grep '^parameters:' "$T/out")
    run info --model "$SRC/configs/model/$cfg.yaml" --print-config
    echo "$out" >"$T/$cfg.printed.yaml"
    [ "$rc" -eq 0 ] && grep -q '^patch_size: ' "$T/out"; check "$cfg --print-config" $?
    run info --model "$T/$cfg.printed.yaml"
    [ "$rc" -eq 0 ] && [ "$(grep '^parameters:' "$T/out")" = "$want" ]
    check "$cfg: printed config re-fed gives '$want'" $?
done
# Defaults are filled in: a minimal config prints every key.
printf 'type: fourcastnet\n' >"$T/min.yaml"
run info --model "$T/min.yaml" --print-config
grep -q '^hidden_size_factor: 1$' "$T/out" && grep -q '^embed_dim: 768$' "$T/out"
check "print-config fills defaults" $?
run info --model "$T/min.yaml"
grep -qF "74,691,840" "$T/out"; check "defaults are the paper model" $?

# Usage errors in configs: exactly one line naming the key and line.
sed 's/^embed_dim: 768/embd_dim: 768/' "$SRC/configs/model/fourcastnet_paper.yaml" >"$T/typo.yaml"
line=$(grep -n '^embd_dim' "$T/typo.yaml" | cut -d: -f1)
run info --model "$T/typo.yaml"
usage_error "unknown key" "line $line:" "'embd_dim'" "did you mean 'embed_dim'?"
sed 's/^depth: 12/depth: twelve/' "$SRC/configs/model/fourcastnet_paper.yaml" >"$T/type.yaml"
line=$(grep -n '^depth' "$T/type.yaml" | cut -d: -f1)
run info --model "$T/type.yaml"
usage_error "wrong type" "line $line:" "'depth'" "integer" "twelve"
printf 'type: fourcastnet\nimg_size: [720, 1440]\npatch_size: 7\n' >"$T/div.yaml"
run info --model "$T/div.yaml"
usage_error "img_size not divisible" "line 2:" "img_size" "patch_size 7"
printf 'type: fourcastnet\nmlp_ratio: -1\n' >"$T/range.yaml"
run info --model "$T/range.yaml"
usage_error "out of range" "line 2:" "'mlp_ratio'" "-1" "range"
printf 'embed_dim: 64\n' >"$T/missing.yaml"
run info --model "$T/missing.yaml"
usage_error "missing required" "line 1:" "'type'"
printf 'type: fourcastnet\nimg_size: [720, 1440\n' >"$T/syntax.yaml"
run info --model "$T/syntax.yaml"
usage_error "YAML syntax error" "syntax.yaml" "line"
run info --model "$T/does_not_exist.yaml"
usage_error "missing config file" "$T/does_not_exist.yaml"

# Command-line usage errors.
run no_such_command
usage_error "unknown subcommand" "'no_such_command'"
run info --no-such-option
usage_error "unknown option" "info: unknown option '--no-such-option'" "see 'wxcast info --help'"
run info --model
usage_error "missing option value" "'--model'"
run forecast --model a.ckpt --init A --init B --steps 1 --output x.nc
usage_error "an option given twice (the second used to replace the first)" "forecast: option '--init' given twice" "comma-separated list"
run train x.yaml --metrics --zero1
usage_error "a value left out before the next option (made a file named --zero1)" "train: option '--metrics' needs a value, got the option '--zero1'" "--metrics=--zero1"
ok "  ... no such file" '[ ! -e ./--zero1 ]'
run info --json=yes
usage_error "flag with a value" "'--json=yes'"
run info stray
usage_error "unexpected positional" "'stray'"
run --bogus info
usage_error "unknown global option" "'--bogus'"
run --quiet info
[ "$rc" -eq 0 ]; check "global --quiet before the command" $?
run
[ "$rc" -eq 2 ]; check "no command: exit 2" $?

checks_summary
