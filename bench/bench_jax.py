#!/usr/bin/env python3
"""bench_jax.py - the JAX side of bench_jax.c (a GRU, sequential and DEER).

Run by bench_jax.c as a child process; it reads commands on stdin and
answers each with one line on stdout (anything else goes to stderr):

  check                      -> "ok jax=<version> devices=<n>" or "nojax <why>"
  load DIR n T B M,..       read DIR/{w_ih,w_hh,b_ih,b_hh,x}.f32 (raw float32,
                             parrnn's GRU: PyTorch's layout and gate order
                             r | z | n), compile and warm up the methods M
                             (a comma list of seq, seq_grad, deer, deer_grad),
                             write their results DIR/y_seq, g_seq, y_deer,
                             g_deer .f32 (outputs; gradients of sum(y) w.r.t.
                             w_ih, w_hh, b_ih, b_hh, in that order, concatenated)
                             -> "ok iterations=<k> converged=<0|1> fell_back=<0|1>"
  time METHOD MINSEC         one sample: calls of METHOD (seq, seq_grad, deer,
                             deer_grad) until MINSEC seconds have passed (at
                             least one) -> "<seconds per call>"
  quit

The GRU step, with xp = W_ih x + b_ih computed for every step at once:
  q = W_hh h + b_hh
  r = sigmoid(xp_r + q_r)   z = sigmoid(xp_z + q_z)
  n = tanh(xp_n + r * q_n)  h' = (1 - z) n + z h

sequential: jax.lax.scan over time; gradients by jax.grad through it.

DEER (Lim et al. 2023), written for this benchmark after parrnn's
prn_deer_rnn (parrnn.h, "DEER: parallel Newton evaluation"), with its f32
defaults: guess y = h0 at every step; each iteration evaluates f and its
dense Jacobians J = df/dh (jax.jacfwd, vmapped over rows and steps) at the
shifted iterate, stops when every |y - f| <= atol + rtol |f| (atol = rtol =
1e-5) or after max_iter = 100 iterations, otherwise solves the linear
recurrence y_t = J_t y_{t-1} + (f_t - J_t y_{t-1}) from h0 with
jax.lax.associative_scan over the affine maps (A2 A1, A2 b1 + b2), replaces
NaN by 0 and clips to +-1e8. Not converged: the sequential evaluation (as
parrnn falls back). Gradients: not through the iterations; a custom VJP
solves the adjoint lam_t = g_t + J_{t+1}^T lam_{t+1} with one reverse
associative scan at the solution, then takes the VJP of one batched step of
f over all rows.
"""
import os
import sys
import time

ATOL = 1e-5
RTOL = 1e-5
MAX_ITER = 100
CLIP = 1e8


def reply(s):
    sys.stdout.write(s + "\n")
    sys.stdout.flush()


try:
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import lax
except Exception as e:  # jax (or numpy) missing: say so, answer nothing else
    for line in sys.stdin:
        cmd = line.split()
        if cmd and cmd[0] == "quit":
            break
        reply("nojax %s" % str(e).replace("\n", " ")[:200])
    sys.exit(0)


def gru_cell(w_hh, b_hh, h, xp):
    """One step for one row: h [n], xp [3n] -> h' [n]."""
    n = h.shape[-1]
    q = w_hh @ h + b_hh
    r = jax.nn.sigmoid(xp[:n] + q[:n])
    z = jax.nn.sigmoid(xp[n:2 * n] + q[n:2 * n])
    nn = jnp.tanh(xp[2 * n:] + r * q[2 * n:])
    return (1.0 - z) * nn + z * h


def project(w_ih, b_ih, x):
    return jnp.einsum("bti,gi->btg", x, w_ih) + b_ih


def seq_forward(params, x, h0):
    w_ih, w_hh, b_ih, b_hh = params
    xp = project(w_ih, b_ih, x)
    step = jax.vmap(gru_cell, in_axes=(None, None, 0, 0))

    def body(h, xp_t):
        hn = step(w_hh, b_hh, h, xp_t)
        return hn, hn

    _, ys = lax.scan(body, h0, jnp.swapaxes(xp, 0, 1))
    return jnp.swapaxes(ys, 0, 1)


# --- DEER -------------------------------------------------------------------
def rows(fn):
    """fn over [B, T, ...] rows."""
    return jax.vmap(jax.vmap(fn, in_axes=(None, None, 0, 0)), in_axes=(None, None, 0, 0))


f_rows = rows(gru_cell)
j_rows = rows(jax.jacfwd(gru_cell, argnums=2))


def shift(y, h0):
    """The previous states: h0, y_0 .. y_{T-2}."""
    return jnp.concatenate([h0[:, None, :], y[:, :-1, :]], axis=1)


def affine_combine(e1, e2):
    """e1 earlier, e2 later: h -> A2 (A1 h + b1) + b2."""
    a1, b1 = e1
    a2, b2 = e2
    return (jnp.einsum("...ij,...jk->...ik", a2, a1), jnp.einsum("...ij,...j->...i", a2, b1) + b2)


def linear_scan(a, b, h0):
    """y_t = a_t y_{t-1} + b_t along axis 1 from y_{-1} = h0."""
    b = b.at[:, 0].add(jnp.einsum("bij,bj->bi", a[:, 0], h0))
    _, y = lax.associative_scan(affine_combine, (a, b), axis=1)
    return y


def deer_solve(w_hh, b_hh, xp, h0):
    B, T, n = xp.shape[0], xp.shape[1], h0.shape[-1]
    y0 = jnp.broadcast_to(h0[:, None, :], (B, T, n))

    def body(c):
        it, y, _, _, _, _ = c
        yp = shift(y, h0)
        fy = f_rows(w_hh, b_hh, yp, xp)
        jac = j_rows(w_hh, b_hh, yp, xp)
        r = jnp.max(jnp.abs(y - fy) / (ATOL + RTOL * jnp.abs(fy)))
        conv = r <= 1.0  # NaN compares false: not converged
        stop = conv | (it >= MAX_ITER)

        def newton():
            yn = linear_scan(jac, fy - jnp.einsum("btij,btj->bti", jac, yp), h0)
            return jnp.clip(jnp.where(jnp.isnan(yn), 0.0, yn), -CLIP, CLIP)

        y = lax.cond(stop, lambda: y, newton)
        return it + jnp.where(stop, 0, 1), y, stop, conv, jac, r

    init = (jnp.int32(0), y0, jnp.bool_(False), jnp.bool_(False), jnp.zeros((B, T, n, n), xp.dtype), jnp.float32(0))
    it, y, _, conv, jac, _ = lax.while_loop(lambda c: ~c[2], body, init)

    def fallback():
        def step(h, xp_t):
            hn = jax.vmap(gru_cell, in_axes=(None, None, 0, 0))(w_hh, b_hh, h, xp_t)
            return hn, hn
        _, ys = lax.scan(step, h0, jnp.swapaxes(xp, 0, 1))
        ys = jnp.swapaxes(ys, 0, 1)
        return ys, j_rows(w_hh, b_hh, shift(ys, h0), xp)

    y, jac = lax.cond(conv, lambda: (y, jac), fallback)
    return y, jac, it, conv


@jax.custom_vjp
def deer_core(w_hh, b_hh, xp, h0):
    return deer_solve(w_hh, b_hh, xp, h0)[0]


def deer_core_fwd(w_hh, b_hh, xp, h0):
    y, jac, _, _ = deer_solve(w_hh, b_hh, xp, h0)
    return y, (w_hh, b_hh, xp, h0, y, jac)


def deer_core_bwd(res, g):
    w_hh, b_hh, xp, h0, y, jac = res
    # lam_t = g_t + J_{t+1}^T lam_{t+1}: a forward scan over reversed time
    at = jnp.swapaxes(jac, -1, -2)[:, 1:]                     # J_{t+1}^T for t < T-1
    at = jnp.concatenate([jnp.zeros_like(at[:, :1]), jnp.flip(at, axis=1)], axis=1)
    lam = jnp.flip(linear_scan(at, jnp.flip(g, axis=1), jnp.zeros_like(h0)), axis=1)
    # one batched step of f over every row at the solution, and its VJP
    _, vjp = jax.vjp(lambda w, b, xq, h: f_rows(w, b, shift(y, h), xq), w_hh, b_hh, xp, h0)
    return vjp(lam)


deer_core.defvjp(deer_core_fwd, deer_core_bwd)


def deer_forward(params, x, h0):
    w_ih, w_hh, b_ih, b_hh = params
    return deer_core(w_hh, b_hh, project(w_ih, b_ih, x), h0)


def deer_stats(params, x, h0):
    w_ih, w_hh, b_ih, b_hh = params
    _, _, it, conv = deer_solve(w_hh, b_hh, project(w_ih, b_ih, x), h0)
    return it, conv


def loss_of(fwd):
    return lambda params, x, h0: jnp.sum(fwd(params, x, h0))


class Case:
    def __init__(self, d, n, T, B, methods):
        def rd(name, shape):
            return jnp.asarray(np.fromfile(os.path.join(d, name + ".f32"), dtype=np.float32).reshape(shape))

        self.params = (rd("w_ih", (3 * n, n)), rd("w_hh", (3 * n, n)), rd("b_ih", (3 * n,)), rd("b_hh", (3 * n,)))
        self.x = rd("x", (B, T, n))
        self.h0 = jnp.zeros((B, n), jnp.float32)
        every = {
            "seq": lambda: jax.jit(seq_forward),
            "seq_grad": lambda: jax.jit(jax.grad(loss_of(seq_forward))),
            "deer": lambda: jax.jit(deer_forward),
            "deer_grad": lambda: jax.jit(jax.grad(loss_of(deer_forward))),
        }
        self.fns = {k: every[k]() for k in methods}
        self.args = (self.params, self.x, self.h0)
        out = {}
        for k, f in self.fns.items():  # compile, warm up, keep the results
            out[k] = jax.block_until_ready(f(*self.args))
        self.iterations, self.converged = 0, True
        if "deer" in methods or "deer_grad" in methods:
            it, conv = jax.jit(deer_stats)(*self.args)
            self.iterations, self.converged = int(it), bool(conv)

        def wr(name, a):
            np.asarray(a, dtype=np.float32).tofile(os.path.join(d, name + ".f32"))

        for k, v in out.items():
            if k.endswith("_grad"):
                wr("g_" + k[:-5], np.concatenate([np.ravel(g) for g in v]))
            else:
                wr("y_" + k, v)

    def time(self, method, minsec):
        f = self.fns[method]
        t0 = time.perf_counter()
        calls = 0
        while True:
            jax.block_until_ready(f(*self.args))
            calls += 1
            el = time.perf_counter() - t0
            if el >= minsec:
                return el / calls


def main():
    case = None
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "quit":
                break
            elif cmd[0] == "check":
                reply("ok jax=%s devices=%d" % (jax.__version__, len(jax.devices())))
            elif cmd[0] == "load":
                case = None
                case = Case(cmd[1], int(cmd[2]), int(cmd[3]), int(cmd[4]), cmd[5].split(","))
                reply("ok iterations=%d converged=%d fell_back=%d" %
                      (case.iterations, int(case.converged), int(not case.converged)))
            elif cmd[0] == "time":
                reply("%.9g" % case.time(cmd[1], float(cmd[2])))
            else:
                reply("error unknown command %s" % cmd[0])
        except Exception as e:  # report, keep serving
            reply("error %s" % str(e).replace("\n", " ")[:300])


if __name__ == "__main__":
    main()
