#!/bin/sh
# PyTorch to engine: tools/export_torch.py writes random PyTorch networks
# (GRU, LSTM, Elman tanh and relu; stacked, bidirectional, with and without
# an nn.Linear readout; as modules and through a saved state_dict and the
# command line) to .prnrnn files; the C program tests/export_check.c loads
# each with prn_rnn_load and runs it over PyTorch's input sequence (one
# direction: per frame with the float frames and the double frames; two:
# prn_rnn_forward), and the outputs must match PyTorch's within 1e-6
# (relative to max(1, |value|)). Skips, saying why, without torch.
# Python: $PARRNN_PYTHON, else python3 or /usr/bin/python3, the first that
# imports torch (Debian: apt-get install python3-torch).
cd "$(dirname "$0")/.." || exit 1
check=${PRNT_EXPORT_CHECK:-build/tests/export_check}
tol=${PRNT_EXPORT_TOL:-1e-6}
py=""
for p in ${PARRNN_PYTHON:-python3 /usr/bin/python3}; do
    if "$p" -c "import torch" >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then
    echo "skip export_torch: no Python with torch (tried ${PARRNN_PYTHON:-python3 /usr/bin/python3}; Debian: apt-get install python3-torch)"
    echo "summary passed=0 failed=0 skipped=1"; exit 0
fi
if [ ! -x "$check" ]; then
    echo "skip export_torch: $check is not built (make $check)"
    echo "summary passed=0 failed=0 skipped=1"; exit 0
fi
tmp=${TMPDIR:-/tmp}/prn_export_torch_$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
if ! "$py" tests/export_torch_cases.py "$tmp" >"$tmp/list" 2>"$tmp/err"; then
    echo "FAIL export_torch: the exporter failed"; tail -n 20 "$tmp/err"
    echo "summary passed=0 failed=1 skipped=0"; exit 1
fi
while read -r name model case; do
    if out=$("$check" "$model" "$case" "$tol" 2>&1); then
        echo "ok   $name: $out"; passed=$((passed + 1))
    else
        echo "FAIL $name: $out"; failed=$((failed + 1))
    fi
done <"$tmp/list"
# the command line refuses what it cannot export, with a reason and status 1
"$py" -c "import torch; torch.save({'foo': torch.zeros(2)}, '$tmp/bad.pt')"
if "$py" tools/export_torch.py "$tmp/bad.pt" "$tmp/bad.prnrnn" 2>"$tmp/err"; then
    echo "FAIL export_torch: a state_dict without a recurrent layer was exported"; failed=$((failed + 1))
elif grep -q "no recurrent layers" "$tmp/err"; then
    echo "ok   refuses a state_dict without a recurrent layer: $(cat "$tmp/err")"; passed=$((passed + 1))
else
    echo "FAIL export_torch: unexpected message: $(cat "$tmp/err")"; failed=$((failed + 1))
fi
echo "summary passed=$passed failed=$failed skipped=0"
[ "$failed" -eq 0 ]
