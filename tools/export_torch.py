#!/usr/bin/env python3
"""Export a PyTorch recurrent network to a parrnn model file (.prnrnn).

    python3 tools/export_torch.py model.pt out.prnrnn --kind gru

model.pt holds a module saved with torch.save(module) or a state_dict
(torch.save(module.state_dict())). The network is an nn.RNN (tanh or relu),
nn.GRU or nn.LSTM, stacked and/or bidirectional, optionally followed by an
nn.Linear readout on its outputs. In a module, the recurrent layer and the
readout are found among its submodules (one of each at most); in a
state_dict, by their keys: weight_ih_l0 ... under one prefix (--prefix to
choose one), and a readout's weight [O, D*H] and bias [O] under another
(--readout PREFIX; found alone when only one such pair is there; --no-readout
to leave it out). C reads the file with prn_rnn_load and steps it with
prn_rnn_framef_step (examples/engine_frames.c).

Importable: export_torch(obj, path, kind=None, relu=None, readout=None,
dtype="f32") takes a module or a state_dict and returns the configuration
written. The file format is prn_rnn_save's (parrnn.h, "Model files").
"""
import argparse
import struct
import sys
import zlib

FILE_VERSION = 1
MAGIC = b"PRNRNN\r\n"
KINDS = {"rnn": 0, "elman": 0, "rnn_tanh": 0, "rnn_relu": 0, "lstm": 1, "gru": 2}
GATES = {0: 1, 1: 4, 2: 3}
DTYPES = {"f32": 0, "f64": 1}


class ExportError(Exception):
    """A model that cannot be exported, with the reason."""


def _np(t):
    return t.detach().cpu().double().reshape(-1).tolist()


def _split_state_dict(sd, prefix=None, readout=None, no_readout=False):
    """(rnn keys without prefix -> tensor, readout (weight, bias) or None)."""
    keys = list(sd.keys())
    prefixes = sorted({k[: -len("weight_ih_l0")] for k in keys if k.endswith("weight_ih_l0")})
    if prefix is not None:
        if prefix and not prefix.endswith("."):
            prefix += "."
        if prefix not in prefixes:
            raise ExportError("no recurrent layer under prefix %r (found: %s)" % (prefix, prefixes or "none"))
    else:
        if len(prefixes) != 1:
            raise ExportError("%s recurrent layers (keys ending in weight_ih_l0: %s); choose one with --prefix"
                              % ("no" if not prefixes else "several", prefixes))
        prefix = prefixes[0]
    rnn = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix) and
           k[len(prefix):].split("_l")[0] in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    ro = None
    if not no_readout:
        mine = {prefix + k for k in rnn}
        cands = [k[: -len("weight")] for k in keys if (k == "weight" or k.endswith(".weight")) and k not in mine
                 and getattr(sd[k], "dim", lambda: 0)() == 2]
        if readout is not None:
            p = readout if readout.endswith(".") or not readout else readout + "."
            if p + "weight" not in sd:
                raise ExportError("no readout weight %r in the state_dict" % (p + "weight"))
            ro = (sd[p + "weight"], sd.get(p + "bias"))
        elif len(cands) == 1:
            ro = (sd[cands[0] + "weight"], sd.get(cands[0] + "bias"))
        elif len(cands) > 1:
            raise ExportError("several candidate readouts %s; choose one with --readout or --no-readout" % cands)
    return rnn, ro


def _from_module(m, readout=None):
    import torch.nn as nn
    if isinstance(m, nn.RNNBase):
        return m, readout
    rnns = [s for s in m.modules() if isinstance(s, nn.RNNBase)]
    lins = [s for s in m.modules() if isinstance(s, nn.Linear)]
    if len(rnns) != 1:
        raise ExportError("the module holds %d recurrent layers (nn.RNN/GRU/LSTM); export needs exactly one" % len(rnns))
    if readout is None and len(lins) > 1:
        raise ExportError("the module holds %d nn.Linear layers; pass the readout explicitly" % len(lins))
    return rnns[0], readout if readout is not None else (lins[0] if lins else None)


def export_torch(obj, path, kind=None, relu=None, readout=None, dtype="f32", prefix=None, no_readout=False):
    """Write obj (an nn.RNN/GRU/LSTM, a module holding one, or a state_dict)
    to path in parrnn's model format; returns the configuration (a dict).
    kind: "rnn"/"rnn_tanh"/"rnn_relu"/"gru"/"lstm" (checked against the
    weights; None: taken from them). readout: an nn.Linear for a module, a
    key prefix for a state_dict."""
    import torch
    import torch.nn as nn
    if dtype not in DTYPES:
        raise ExportError("dtype %r: want f32 or f64" % dtype)
    if isinstance(obj, nn.Module):
        rnn, lin = _from_module(obj, readout if isinstance(readout, nn.Module) else None)
        if no_readout:
            lin = None
        if getattr(rnn, "proj_size", 0):
            raise ExportError("LSTM with proj_size > 0 has no parrnn equivalent")
        mode = rnn.mode  # 'RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU'
        mkind = {"RNN_TANH": 0, "RNN_RELU": 0, "LSTM": 1, "GRU": 2}[mode]
        mrelu = mode == "RNN_RELU"
        sd = {k: v for k, v in rnn.state_dict().items()}
        ro = (lin.weight, lin.bias) if lin is not None else None
    elif isinstance(obj, dict):
        sd, ro = _split_state_dict(obj, prefix, readout if isinstance(readout, str) else None, no_readout)
        mkind = None
        mrelu = None
    else:
        raise ExportError("cannot export a %s: want an nn.Module or a state_dict" % type(obj).__name__)

    if "weight_ih_l0" not in sd or "weight_hh_l0" not in sd:
        raise ExportError("no weight_ih_l0 / weight_hh_l0")
    H = sd["weight_hh_l0"].shape[1]
    I = sd["weight_ih_l0"].shape[1]
    G = sd["weight_ih_l0"].shape[0] // H
    gkind = {1: 0, 4: 1, 3: 2}.get(G)
    if gkind is None or sd["weight_ih_l0"].shape[0] != G * H:
        raise ExportError("weight_ih_l0 is %s with hidden size %d: not 1, 3 or 4 gates" % (tuple(sd["weight_ih_l0"].shape), H))
    if kind is not None:
        k = kind.lower()
        if k not in KINDS:
            raise ExportError("kind %r: want rnn, rnn_tanh, rnn_relu, gru or lstm" % kind)
        if KINDS[k] != gkind:
            raise ExportError("kind %r, but the weights have %d gates (%s)" % (kind, G, {0: "rnn", 1: "lstm", 2: "gru"}[gkind]))
        if k == "rnn_relu":
            relu = True
        elif k == "rnn_tanh":
            relu = False
    if mkind is not None and mkind != gkind:
        raise ExportError("module mode and weights disagree")
    if relu is None:
        relu = bool(mrelu)
    L = 0
    while "weight_ih_l%d" % L in sd:
        L += 1
    D = 2 if "weight_ih_l0_reverse" in sd else 1
    params = []
    for l in range(L):
        for d in range(D):
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            In = I if l == 0 else D * H
            wi, wh = sd["weight_ih" + sfx], sd["weight_hh" + sfx]
            if tuple(wi.shape) != (G * H, In) or tuple(wh.shape) != (G * H, H):
                raise ExportError("layer %s: weight_ih %s, weight_hh %s; want (%d, %d) and (%d, %d)"
                                  % (sfx, tuple(wi.shape), tuple(wh.shape), G * H, In, G * H, H))
            bi, bh = sd.get("bias_ih" + sfx), sd.get("bias_hh" + sfx)
            zeros = [0.0] * (G * H)
            params += [_np(wi), _np(wh), _np(bi) if bi is not None else zeros, _np(bh) if bh is not None else zeros]
    O = 0
    if ro is not None:
        w, b = ro
        if w.dim() != 2 or w.shape[1] != D * H:
            raise ExportError("readout weight %s: want (O, %d)" % (tuple(w.shape), D * H))
        O = w.shape[0]
        params += [_np(w), _np(b) if b is not None else [0.0] * O]
    head = struct.pack("<8sI6I6Q", MAGIC, FILE_VERSION, gkind, DTYPES[dtype], L, D - 1, 1 if relu else 0, len(params),
                       I, H, 1, 0, 0, O)
    body = bytearray(head)
    fmt = "<%d" + ("f" if dtype == "f32" else "d")
    for p in params:
        body += struct.pack("<Q", len(p))
        body += struct.pack(fmt % len(p), *p)
    body += struct.pack("<I", zlib.crc32(bytes(body)) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(bytes(body))
    return {"kind": {0: "rnn_relu" if relu else "rnn_tanh", 1: "lstm", 2: "gru"}[gkind], "input_size": I,
            "hidden_size": H, "num_layers": L, "bidirectional": D == 2, "output_size": O, "dtype": dtype}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Export a PyTorch nn.RNN/GRU/LSTM (+ optional nn.Linear readout) "
                                 "to a parrnn .prnrnn model file.")
    ap.add_argument("model", help="a file written by torch.save: a module, or a state_dict")
    ap.add_argument("out", help="the .prnrnn file to write")
    ap.add_argument("--kind", choices=["rnn", "rnn_tanh", "rnn_relu", "gru", "lstm"],
                    help="the network's kind, checked against the weights (default: from the weights; "
                         "a state_dict of an nn.RNN is tanh unless rnn_relu)")
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32", help="values in the file (default f32)")
    ap.add_argument("--prefix", help="state_dict: the recurrent layer's key prefix, e.g. 'rnn.' (default: the only one)")
    ap.add_argument("--readout", help="state_dict: the readout's key prefix, e.g. 'fc.' (default: the only "
                                      "other 2-D weight, if any)")
    ap.add_argument("--no-readout", action="store_true", help="leave any readout out")
    a = ap.parse_args(argv)
    import torch
    try:
        try:
            try:
                obj = torch.load(a.model, map_location="cpu", weights_only=False)
            except TypeError:  # torch before 1.13 has no weights_only
                obj = torch.load(a.model, map_location="cpu")
        except (AttributeError, ModuleNotFoundError) as e:
            raise ExportError("%s holds a pickled module whose class cannot be imported here (%s); save its "
                              "state_dict instead: torch.save(model.state_dict(), path)" % (a.model, e))
        cfg = export_torch(obj, a.out, kind=a.kind, readout=a.readout, dtype=a.dtype, prefix=a.prefix,
                           no_readout=a.no_readout)
    except (ExportError, OSError) as e:
        print("export_torch: %s" % e, file=sys.stderr)
        return 1
    print("export_torch: wrote %s: %s" % (a.out, ", ".join("%s=%s" % kv for kv in cfg.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
