#!/usr/bin/env bash
# The shipped synth -> recipe -> train config chains fit together as the docs run them (from the
# repository root): each recipe reads the folder its synth config writes and no date past the
# world's end; each training config reads the archive its recipe writes, its train/valid/test
# years lie within the recipe's dates, its channels_in are recipe variables, as many as the
# model's input channels (plain FourCastNet). A user trial found two chains broken this way
# (an archive path that no recipe writes; years 2004-2005 of a 4-year world).
# Usage: configs_chain.sh WXCAST SRCDIR. Needs /usr/bin/python3 with PyYAML (else exit 77).
set -u
SRC=$(cd "$2" && pwd)
PY=/usr/bin/python3
$PY -c "import yaml" 2>/dev/null || { echo "skip: /usr/bin/python3 lacks yaml"; exit 77; }
exec $PY - "$SRC" <<'PY'
import glob, os, sys, yaml
root = sys.argv[1]
cfg = lambda p: os.path.join(root, "configs", p)
load = lambda p: yaml.safe_load(open(p))
rel = lambda base, p: os.path.normpath(os.path.join(os.path.dirname(base), p))
passed = failed = 0
def ok(what, cond):
    global passed, failed
    if cond: passed += 1
    else: failed += 1; print("FAIL:", what)
# (synth config, the folder it is written to from the repository root, recipe, training configs)
chains = [("synth/tiny.yaml", None, "recipes/synth_tiny.yaml", ["train/fourcastnet_tiny.yaml"]),
          ("synth/tiny.yaml", None, "recipes/fourcastnet_plus_tiny.yaml", ["train/fourcastnet_plus_tiny.yaml"]),
          ("demo/synth.yaml", "world", "recipes/synth_demo_graphcast.yaml", ["train/graphcast_tiny.yaml"])]
for synth, outdir, recipe, trains in chains:
    s, r = load(cfg(synth)), load(cfg(recipe))
    world = os.path.join(root, outdir or s["output"])
    y0, years = s.get("start_year", 2000), s.get("years", 1)
    last = f"{y0 + years - 1}-12-31T18:00"
    srcs = {os.path.dirname(rel(cfg(recipe), p)) for p in r["sources"]}
    ok(f"{recipe} reads {srcs}, the folder {synth} writes ({world})", srcs == {world})
    ok(f"{recipe} dates end {r['dates']['end']} within {synth}'s world (last {last})",
       r["dates"]["start"] >= f"{y0}-01-01" and r["dates"]["end"] <= last)
    ok(f"{recipe} statistics within its dates", r["dates"]["start"] <= r["statistics"]["start"]
       and r["statistics"]["end"] <= r["dates"]["end"])
    names = [v["name"] for v in r["variables"]]
    for t in trains:
        c = load(cfg(t)); d = c["data"]
        ok(f"{t} archive {d['archive']} is {recipe}'s output",
           rel(cfg(t), d["archive"]) == rel(cfg(recipe), r["output"]))
        y_first, y_last = int(r["dates"]["start"][:4]), int(r["dates"]["end"][:4])
        for k in ("train_years", "valid_years", "test_years"):
            if k in d:
                ok(f"{t} {k} {d[k]} within the recipe's {y_first}..{y_last}",
                   y_first <= d[k][0] <= d[k][1] <= y_last)
        ch = d.get("channels_in") or []
        ok(f"{t} channels_in {ch} are recipe variables", all(n in names for n in ch))
        m = c["model"]
        m = load(rel(cfg(t), m)) if isinstance(m, str) else m
        if m.get("type") == "fourcastnet" and not m.get("extra_inputs"):
            n_in = len(ch) if ch else len(names)
            ok(f"{t}: {n_in} input channels for a model of {m['in_channels']}", n_in == m["in_channels"])
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
