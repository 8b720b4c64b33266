"""Writes the cases of tests/export_torch.sh into a folder: for each, a
random PyTorch network (torch.manual_seed), exported with
tools/export_torch.py (as a module, or through torch.save of a state_dict
and the command line), and a random input sequence with PyTorch's outputs
(float32). Prints one line per case: NAME MODEL CASE."""
import os
import struct
import subprocess
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from export_torch import export_torch  # noqa: E402

out = sys.argv[1]
T, I = 50, 5


class WithReadout(nn.Module):
    def __init__(self, rnn, O):
        super().__init__()
        self.rnn = rnn
        self.fc = nn.Linear(rnn.hidden_size * (2 if rnn.bidirectional else 1), O)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y)


def case(name, make, readout, via_cli):
    torch.manual_seed(sum(map(ord, name)))
    rnn = make()
    model = WithReadout(rnn, 3) if readout else rnn
    model.eval()
    x = torch.rand(1, T, I) * 2 - 1
    with torch.no_grad():
        y = model(x) if readout else model(x)[0]
    path = os.path.join(out, name + ".prnrnn")
    if via_cli:
        pt = os.path.join(out, name + ".pt")
        torch.save(model.state_dict(), pt)
        kind = {"RNN_TANH": "rnn", "RNN_RELU": "rnn_relu", "LSTM": "lstm", "GRU": "gru"}[rnn.mode]
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "export_torch.py")
        subprocess.run([sys.executable, tool, pt, path, "--kind", kind], check=True, stdout=subprocess.DEVNULL)
    else:
        export_torch(model, path)
    Y = y.shape[-1]
    with open(os.path.join(out, name + ".case"), "wb") as f:
        f.write(struct.pack("<3I", T, I, Y))
        f.write(struct.pack("<%df" % (T * I), *x.reshape(-1).tolist()))
        f.write(struct.pack("<%df" % (T * Y), *y.reshape(-1).tolist()))
    print(name, path, os.path.join(out, name + ".case"))


case("gru", lambda: nn.GRU(I, 8, batch_first=True), False, False)
case("gru_stacked_readout_cli", lambda: nn.GRU(I, 12, num_layers=2, batch_first=True), True, True)
case("lstm", lambda: nn.LSTM(I, 8, batch_first=True), False, True)
case("lstm_stacked_readout", lambda: nn.LSTM(I, 16, num_layers=3, batch_first=True), True, False)
case("elman_tanh_readout", lambda: nn.RNN(I, 10, batch_first=True), True, False)
case("elman_relu_stacked_cli", lambda: nn.RNN(I, 7, num_layers=2, nonlinearity="relu", batch_first=True), True, True)
case("gru_nobias", lambda: nn.GRU(I, 9, bias=False, batch_first=True), False, False)
case("gru_bidir_stacked_readout", lambda: nn.GRU(I, 6, num_layers=2, bidirectional=True, batch_first=True), True, False)
case("lstm_bidir_readout_cli", lambda: nn.LSTM(I, 5, bidirectional=True, batch_first=True), True, True)
case("elman_relu_bidir", lambda: nn.RNN(I, 4, nonlinearity="relu", bidirectional=True, batch_first=True), False, False)
case("elman_tanh_bidir_stacked_readout", lambda: nn.RNN(I, 6, num_layers=2, bidirectional=True, batch_first=True), True, True)
