#!/usr/bin/env python3
"""Golden fixtures for parrnn's Elman, LSTM and GRU networks, from PyTorch.

Writes tests/golden/{rnn_tanh,rnn_relu,lstm,gru}.txt (next to this script),
read by tests/test_rnn_golden.c. The fixtures are committed, so `make test`
needs no Python; run this only to regenerate them:

    python3 -m pip install torch
    python3 tests/golden/gen_golden.py

The output is deterministic (fixed seeds, float64 on the CPU). Checking a
parrnn export instead (see test_rnn_golden.c, PRNT_GOLDEN_EXPORT):

    python3 tests/golden/gen_golden.py --check-export FILE

loads the parameters parrnn wrote into a fresh torch module by name
(load_state_dict, strict) and compares torch's y with the y parrnn wrote.

Recipe per case: nn.RNN / nn.LSTM / nn.GRU (batch_first=True) in float64
from a fixed seed; every parameter, x, h0 (c0) and the loss weights Ry, Rh
(Rc) rounded to float32-representable values, so that an f32 and an f64
evaluation compute the same function; then in float64:
    y, h_n (c_n) = module(x, h0 (, c0))
    loss = sum(y * Ry) + sum(h_n * Rh) (+ sum(c_n * Rc))
and the gradients of loss with respect to every parameter, x, h0 (c0).

File format (plain text, whitespace-separated tokens):

    # comment lines (only before the first case)
    parrnn-golden 1
    case NAME
    kind rnn_tanh | rnn_relu | lstm | gru
    input_size I
    hidden_size H
    num_layers L
    bidirectional 0 | 1
    batch B
    seq_len T
    state0 0 | 1          1: h0 (c0) given; 0: zeros (no h0, c0, grad.h0, ...)
    f32_inputs 0 | 1      1: the param blocks and x, h0, c0, Ry, Rh, Rc hold
                          float32 values printed with %.9g: read them as
                          float32 (the nearest double to the decimal is not
                          the float32 value); absent means 0
    param NAME NDIM D0 D1 ...   then the values, row-major
    ...                         (every parameter, in state_dict order)
    tensor NAME NDIM D0 ...     then the values
    ...
    end
    case ...

Tensors: x [B,T,I]; h0, c0 [L*D,B,H] (when state0 is 1); Ry [B,T,D*H];
Rh, Rc [L*D,B,H]; y [B,T,D*H]; h_n, c_n [L*D,B,H]; loss (NDIM 0, one
value); grad.NAME for every parameter, grad.x, grad.h0, grad.c0. Inputs
(parameters, x, h0, c0, R*) are float32 values printed with %.9g (exact
when read as float32: f32_inputs 1); outputs and gradients are float64,
printed with %.15g (ample for the f64 tolerance of 1e-10, and it keeps the
files small).
"""
import os
import sys

import torch

VERSION = 1
HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("rnn_tanh", "rnn_relu", "lstm", "gru")
INPUTS = ("x", "h0", "c0", "Ry", "Rh", "Rc")  # float32 values, as the parameters

# (I, H, L, bidirectional, B, T, state0) per kind; every kind has a stacked
# bidirectional case, T = 1, B = 1, I = 1 and a case without state0.
COMMON = [
    (3, 4, 1, 0, 1, 1, 1),
    (5, 8, 1, 0, 3, 6, 1),
    (1, 2, 2, 0, 3, 5, 1),
    (3, 4, 1, 1, 3, 2, 1),
    (3, 4, 2, 1, 3, 7, 1),
    (4, 3, 2, 1, 2, 5, 0),
    (1, 2, 1, 0, 3, 7, 0),
]
CASES = {
    "rnn_tanh": COMMON,
    "gru": COMMON,
    "lstm": COMMON,
    "rnn_relu": [
        (3, 4, 1, 0, 1, 1, 1),
        (5, 8, 1, 0, 3, 6, 1),
        (3, 4, 2, 1, 3, 5, 1),
        (1, 2, 2, 0, 1, 6, 0),
    ],
}


def make_module(kind, I, H, L, bi):
    if kind in ("rnn_tanh", "rnn_relu"):
        return torch.nn.RNN(I, H, num_layers=L, nonlinearity=kind[4:], batch_first=True,
                            bidirectional=bool(bi), dtype=torch.float64)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    return cls(I, H, num_layers=L, batch_first=True, bidirectional=bool(bi), dtype=torch.float64)


def f32(t):
    """t rounded to float32-representable values, kept in float64."""
    return t.float().double()


def fmt_block(out, head, name, t, digits):
    t = t.detach().contiguous()
    dims = list(t.shape)
    out.append("%s %s %d%s" % (head, name, len(dims), "".join(" %d" % d for d in dims)))
    vals = t.reshape(-1).tolist()
    for i in range(0, len(vals), 6):
        out.append(" ".join(("%%.%dg" % digits) % v for v in vals[i:i + 6]))


def gen_case(out, kind, seed, I, H, L, bi, B, T, with_s0):
    torch.manual_seed(seed)
    m = make_module(kind, I, H, L, bi)
    D = 2 if bi else 1
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(f32(p))
    x = f32(torch.randn(B, T, I, dtype=torch.float64)).requires_grad_()
    h0 = f32(torch.randn(L * D, B, H, dtype=torch.float64) * 0.5).requires_grad_()
    c0 = f32(torch.randn(L * D, B, H, dtype=torch.float64) * 0.5).requires_grad_()
    Ry = f32(torch.randn(B, T, D * H, dtype=torch.float64))
    Rh = f32(torch.randn(L * D, B, H, dtype=torch.float64))
    Rc = f32(torch.randn(L * D, B, H, dtype=torch.float64))
    if kind == "lstm":
        y, (hn, cn) = m(x, (h0, c0)) if with_s0 else m(x)
        loss = (y * Ry).sum() + (hn * Rh).sum() + (cn * Rc).sum()
    else:
        y, hn = m(x, h0) if with_s0 else m(x)
        cn = None
        loss = (y * Ry).sum() + (hn * Rh).sum()
    leaves = list(m.parameters()) + [x] + ([h0] + ([c0] if kind == "lstm" else []) if with_s0 else [])
    grads = torch.autograd.grad(loss, leaves)
    sd = m.state_dict()
    names = list(sd.keys())
    assert [n for n, _ in m.named_parameters()] == names

    name = "%s_i%d_h%d_l%d_%s_b%d_t%d%s" % (kind, I, H, L, "bi" if bi else "uni", B, T, "" if with_s0 else "_nostate0")
    out.append("case " + name)
    for k, v in (("kind", kind), ("input_size", I), ("hidden_size", H), ("num_layers", L),
                 ("bidirectional", bi), ("batch", B), ("seq_len", T), ("state0", with_s0), ("f32_inputs", 1)):
        out.append("%s %s" % (k, v))
    for n in names:
        fmt_block(out, "param", n, sd[n], 9)
    fmt_block(out, "tensor", "x", x, 9)
    if with_s0:
        fmt_block(out, "tensor", "h0", h0, 9)
        if kind == "lstm":
            fmt_block(out, "tensor", "c0", c0, 9)
    fmt_block(out, "tensor", "Ry", Ry, 9)
    fmt_block(out, "tensor", "Rh", Rh, 9)
    if kind == "lstm":
        fmt_block(out, "tensor", "Rc", Rc, 9)
    fmt_block(out, "tensor", "y", y, 15)
    fmt_block(out, "tensor", "h_n", hn, 15)
    if kind == "lstm":
        fmt_block(out, "tensor", "c_n", cn, 15)
    fmt_block(out, "tensor", "loss", loss, 15)
    gnames = names + ["x"] + (["h0"] + (["c0"] if kind == "lstm" else []) if with_s0 else [])
    for n, g in zip(gnames, grads):
        fmt_block(out, "tensor", "grad." + n, g, 15)
    out.append("end")


def generate():
    torch.set_num_threads(1)  # same reductions, same bits, every run
    total = 0
    for ki, kind in enumerate(KINDS):
        out = ["# parrnn golden fixtures from PyTorch %s: written by tests/golden/gen_golden.py, do not edit"
               % torch.__version__.split("+")[0],
               "# (format: see the script's docstring)", "parrnn-golden %d" % VERSION]
        for ci, c in enumerate(CASES[kind]):
            gen_case(out, kind, 1000 * (ki + 1) + ci, *c)
        path = os.path.join(HERE, kind + ".txt")
        with open(path, "w") as f:
            f.write("\n".join(out) + "\n")
        size = os.path.getsize(path)
        total += size
        print("%s: %d cases, %d bytes" % (path, len(CASES[kind]), size))
    print("total %d bytes" % total)


# ---- reading the format (for --check-export) --------------------------------
def read_cases(path):
    toks = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                toks.extend(line.split())
    pos = 0

    def nxt():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    assert nxt() == "parrnn-golden" and int(nxt()) == VERSION, "not a parrnn-golden v1 file"
    cases = []
    while pos < len(toks):
        assert nxt() == "case"
        c = {"name": nxt(), "param": {}, "tensor": {}}
        while True:
            t = nxt()
            if t == "end":
                break
            if t in ("param", "tensor"):
                name, nd = nxt(), int(nxt())
                dims = [int(nxt()) for _ in range(nd)]
                n = 1
                for d in dims:
                    n *= d
                vals = [float(nxt()) for _ in range(n)]
                c[t][name] = torch.tensor(vals, dtype=torch.float64).reshape(dims)
            else:
                v = nxt()
                c[t] = v if t == "kind" else int(v)
        if c.get("f32_inputs", 0):
            for t in ("param", "tensor"):
                for k, v in c[t].items():
                    if t == "param" or k in INPUTS:
                        c[t][k] = f32(v)
        cases.append(c)
    return cases


def check_export(path):
    """A file parrnn wrote in this format: its parameters load into torch by
    name and torch's y equals parrnn's."""
    bad = 0
    for c in read_cases(path):
        m = make_module(c["kind"], c["input_size"], c["hidden_size"], c["num_layers"], c["bidirectional"])
        m.load_state_dict(c["param"], strict=True)
        with torch.no_grad():
            y = m(c["tensor"]["x"])[0]
        err = (y - c["tensor"]["y"]).abs().max().item()
        tol = 1e-12  # parrnn exports from an f64 network
        print("%s: max |y_torch - y_parrnn| = %.3g (tolerance %g)" % (c["name"], err, tol))
        bad += not (err <= tol)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check-export":
        sys.exit(check_export(sys.argv[2]))
    if len(sys.argv) != 1:
        sys.exit("usage: gen_golden.py [--check-export FILE]")
    generate()
