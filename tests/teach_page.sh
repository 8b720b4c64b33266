#!/bin/sh
# The interactive teaching page (scan_explain --html) in a real browser:
# headless Chromium opens the generated file with #selftest, which drives
# every view and exercise and compares the page's own JavaScript results
# with the library's values that scan_explain embedded; this script reads
# the verdict from the DOM, checks that a page with one library value
# altered fails, that the file loads nothing from the network, and takes
# screenshots of two views, checked to be neither blank nor alike.
# Usage: sh tests/teach_page.sh [SCAN_EXPLAIN]
#   (default $PRNT_SCAN_EXPLAIN, else build/examples/scan_explain)
# CHROMIUM names the browser (default: chromium, chromium-browser,
# google-chrome, whichever is found). TEACH_SHOTS_DIR, when set, keeps the
# screenshots there (make teach-shots: examples/img). Prints a summary line
# like the test programs; skips, saying why, without the program or a browser.
cd "$(dirname "$0")/.." || exit 1
tool=${1:-${PRNT_SCAN_EXPLAIN:-build/examples/scan_explain}}
passed=0; failed=0; skipped=0
skip_all() { echo "skip teach_page ($1)"; echo "summary passed=0 failed=0 skipped=1"; exit 0; }
[ -x "$tool" ] || skip_all "$tool not built"
browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
    for b in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
    done
fi
[ -n "$browser" ] || skip_all "no headless browser: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM"
command -v "$browser" >/dev/null 2>&1 || skip_all "CHROMIUM=$browser is not a program"
tmp=${TMPDIR:-/tmp}/prn_teach_page_$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
shots=${TEACH_SHOTS_DIR:-$tmp}
mkdir -p "$shots" || exit 1

check() { # NAME STATUS [DETAIL]
    if [ "$2" -eq 0 ]; then echo "ok   $1"; passed=$((passed + 1))
    else echo "FAIL $1${3:+: $3}"; failed=$((failed + 1)); fi
}
# chromium ARGS... : headless, its own profile, at most 120 s; stderr (its
# D-Bus and GPU chatter) to a log shown on failure
chrome() {
    timeout 120 "$browser" --headless --disable-gpu --no-sandbox --no-first-run --disable-dev-shm-usage \
        --user-data-dir="$tmp/profile" --hide-scrollbars "$@" 2>>"$tmp/chromium.log"
}
# verdict FILE : the text of <div id="verdict"> in the DOM after #selftest
verdict() {
    chrome --virtual-time-budget=30000 --dump-dom "file://$1#selftest" > "$tmp/dom.html"
    sed -n 's/.*<div id="verdict"[^>]*>\([^<]*\)<.*/\1/p' "$tmp/dom.html" | head -n 1
}

# --- the page is written, whole and self-contained ---------------------
page=$tmp/scan_explain.html
"$tool" --html "$page" > "$tmp/out" 2>&1
check "scan_explain --html writes the page" $? "$(head -n 5 "$tmp/out")"
"$tool" --html > /dev/null 2>&1
[ $? -eq 2 ]; check "scan_explain --html without a file: usage, status 2" $?
grep -q '"scan":\[{"name":"pattern8"' "$page" && ! grep -q '@EXPECTED_JSON@' "$page"
check "the library's values are embedded" $?
# nothing from the network: no external scripts, styles, images or frames;
# the one address is the SVG namespace name, which is never fetched
bad=$(grep -n -i -E '<script[^>]*src=|<link|<img|<iframe|@import|url\(' "$page" | head -n 3)
[ -z "$bad" ]; check "no external resources" $? "$bad"
bad=$(grep -o -E 'https?://[^"'\'' )<]*' "$page" | grep -v -x 'http://www.w3.org/2000/svg' | head -n 3)
[ -z "$bad" ]; check "no address other than the SVG namespace" $? "$bad"

# --- the self-test in the browser ---------------------------------------
v=$(verdict "$page")
n=$(echo "$v" | sed -n 's/^PASS \([0-9]*\) checks$/\1/p')
[ -n "$n" ] && [ "$n" -ge 500 ]
check "self-test in $browser: $v" $? "$(sed -n 's/.*<pre id="selftest-log"[^>]*>//p' "$tmp/dom.html" | head -n 8; tail -n 5 "$tmp/chromium.log")"

# the self-test must notice a wrong library value: a sequential h, a tree node, a DEER iterate
sed 's/"h_sequential":\[1\.5,/"h_sequential":[1.25,/' "$page" > "$tmp/bad1.html"
sed 's/"phase":"up","d":1,"nodes":\[\[0\.5,1\],\[1,4\]/"phase":"up","d":1,"nodes":[[0.5,1],[1,5]/' "$page" > "$tmp/bad2.html"
sed 's/"iterates":\[\[0,0,/"iterates":[[0,0.001,/' "$page" > "$tmp/bad3.html"
for k in 1 2 3; do
    if cmp -s "$page" "$tmp/bad$k.html"; then check "altered page $k differs from the page" 1 "the pattern did not match"; continue; fi
    v=$(verdict "$tmp/bad$k.html")
    case "$v" in FAIL*) r=0 ;; *) r=1 ;; esac
    check "a page with one library value altered ($k) fails: $v" $r
done

# --- screenshots of two views, not blank --------------------------------
chrome --window-size=1280,1000 --virtual-time-budget=5000 --screenshot="$shots/teach_tree.png" \
    "file://$page#view=tree&step=6" > /dev/null
check "screenshot of the tree view" $?
chrome --window-size=1280,1000 --virtual-time-budget=5000 --screenshot="$shots/teach_deer.png" \
    "file://$page#view=deer&k=5" > /dev/null
check "screenshot of the DEER view" $?
if command -v python3 >/dev/null 2>&1; then
    python3 - "$shots/teach_tree.png" "$shots/teach_deer.png" > "$tmp/png" 2>&1 <<'EOF'
# Decodes the PNGs (8-bit RGB or RGBA, not interlaced: what Chromium
# writes) with zlib only, and checks that each has many colours, no colour
# covering almost all of it, and that the two differ.
import sys, zlib, struct
def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR": hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT": idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, "unexpected PNG format %r" % (hdr,)
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, rows, i = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [], 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, [r[x:x + 3] for r in rows for x in range(0, stride, bpp)]
ok, seen = True, []
for path in sys.argv[1:]:
    w, h, px = pixels(path)
    counts = {}
    for p in px: counts[p] = counts.get(p, 0) + 1
    top = max(counts.values()) / len(px)
    good = w >= 800 and h >= 600 and len(counts) >= 32 and top < 0.9
    print("%s: %dx%d, %d colours, the commonest covers %.0f%%%s" % (path.split("/")[-1], w, h, len(counts), 100 * top, "" if good else "  <- blank?"))
    ok = ok and good
    seen.append(px)
if seen[0] == seen[1]: print("the two screenshots are identical"); ok = False
sys.exit(0 if ok else 1)
EOF
    check "the screenshots are not blank and differ: $(tr '\n' ';' < "$tmp/png")" $?
else
    echo "skip the screenshot check (no python3)"
    skipped=$((skipped + 1))
fi

echo "summary passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
