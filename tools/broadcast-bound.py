#!/usr/bin/env python3
"""A lower bound on the transmissions any fixed broadcast plan needs.

For one of the bench's graphs (written by `starling-bench mesh-graphs`), solve
the mixed-integer program: choose which nodes transmit (x) and how many extra
times (r, at most 2), so that the expected number of nodes that miss the
packet, with independent loss per reception, is at most EPS. A node that
transmits had the packet and counts as delivered (its loss is assumed repaired
for free); a node that does not, hearing k transmissions, misses with loss^k.
Repairs cost nothing here, so the optimum is a lower bound for any plan; with
--connected the transmitters must also form a connected set holding the
source (single-commodity flow), as they must to pass the packet on.

HiGHS (scipy.optimize.milp) gives the best plan found and a proven lower
bound (the dual bound) within the time limit.

    cd /tmp && swift run -c release --package-path /path/to/starling starling-bench mesh-graphs
    python3 tools/broadcast-bound.py --eps 0.023 --connected /tmp/graph-100-8.txt

Why 0.023: on the 100-node graphs, "never below 99%" means no node missed in
any of 30 broadcasts; with Poisson misses, P(none in 30) = exp(-30 EPS) is one
half at EPS = 0.023.
"""
import argparse
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix


def load(path):
    lines = open(path).read().split("\n")
    cds = int(lines[0])
    component = [int(v) for v in lines[1].split()]
    neighbors = [[int(v) for v in line.split()] for line in lines[2:]]
    return cds, component, neighbors


def bound(path, eps, loss=0.05, levels=4, repeats=2, connected=False, seconds=300, source=0, slope=None):
    """With `slope` (and no EPS): minimise misses + slope x transmissions instead."""
    cds, component, neighbors = load(path)
    component = component[source:] + component[:source]  # the source first
    index = {v: i for i, v in enumerate(component)}
    n = len(component)
    arcs = [(index[u], index[v]) for u in component for v in neighbors[u]] if connected else []
    # Variables: x[n] transmits, r[n] extra transmissions, z[n*levels] hears >= k, m[n] miss, f[arcs] flow.
    X, R, Z, M = 0, n, 2 * n, 2 * n + n * levels
    F = M + n
    N = F + len(arcs)
    cost = np.zeros(N)
    cost[X:X + n] = 1 if slope is None else slope
    cost[R:R + n] = 1 if slope is None else slope
    if slope is not None:
        cost[M:M + n] = 1
    A = lil_matrix((n * (levels + 2) + 2 * n + 2 * len(arcs) + 2, N))
    lo, hi = [], []
    row = 0

    def constrain(low, high):
        nonlocal row
        lo.append(low)
        hi.append(high)
        row += 1

    step = [loss ** k * (1 - loss) for k in range(levels)]  # miss falls by this at the (k+1)th reception
    for v in component:
        i = index[v]
        for k in range(levels):
            A[row, Z + i * levels + k] = 1
        for t in neighbors[v]:
            A[row, X + index[t]] -= 1
            A[row, R + index[t]] -= 1
        constrain(-np.inf, 0)  # hears at most as many transmissions as its neighbours send
        for k in range(levels - 1):
            A[row, Z + i * levels + k + 1] = 1
            A[row, Z + i * levels + k] = -1
            constrain(-np.inf, 0)
        A[row, M + i] = 1
        A[row, X + i] = 1
        for k in range(levels):
            A[row, Z + i * levels + k] = step[k]
        constrain(1, np.inf)  # m >= loss^k unless it transmits
        A[row, R + i] = 1
        A[row, X + i] = -repeats
        constrain(-np.inf, 0)  # only transmitters repeat
    if slope is None:
        for i in range(n):
            A[row, M + i] = 1
        constrain(-np.inf, eps)
    if connected:
        source = 0
        into = [[] for _ in range(n)]
        out = [[] for _ in range(n)]
        for a, (u, v) in enumerate(arcs):
            out[u].append(a)
            into[v].append(a)
        for i in range(n):
            if i == source:
                A[row, X + i] = 1
                constrain(1, 1)
                continue
            for a in into[i]:
                A[row, F + a] += 1
            for a in out[i]:
                A[row, F + a] -= 1
            A[row, X + i] -= 1
            constrain(0, 0)  # each transmitter takes one unit of flow from the source
        for a, (u, v) in enumerate(arcs):
            A[row, F + a] = 1
            A[row, X + u] = -n
            constrain(-np.inf, 0)
            A[row, F + a] = 1
            A[row, X + v] = -n
            constrain(-np.inf, 0)  # flow only between transmitters
    A = A[:row].tocsr()
    integrality = np.ones(N)
    integrality[M:] = 0
    upper = np.ones(N)
    upper[R:R + n] = repeats
    upper[F:] = n
    result = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=integrality,
                  bounds=Bounds(np.zeros(N), upper), options={"time_limit": seconds, "mip_rel_gap": 0.01})
    return cds, result


def envelope(path, ratio, slopes, connected=False, seconds=300, source=0):
    """A lower bound on the expected misses of any scheme, adaptive or not, that
    spends `ratio` x the greedy CDS transmissions per broadcast on average: by
    Lagrange duality, for any slope L >= 0, min over plans of (misses + L x
    transmissions) - L x budget is at most what any mixture of plans of that
    average cost misses. One solve per slope; the best is kept. (Up to seven
    copies a node, six levels of hearing: nodes hearing more than six copies are
    counted as missing with loss^6, at most 1.6e-8 each too much.)"""
    cds, _, _ = load(path)
    budget = ratio * cds
    best = 0.0
    for slope in slopes:
        _, result = bound(path, None, levels=6, repeats=6, connected=connected, seconds=seconds, source=source, slope=slope)
        proven = getattr(result, "mip_dual_bound", None) or 0.0
        value = proven - slope * budget
        print(f"  slope {slope}: misses + {slope} x transmissions at least {proven:.4f} "
              f"({'optimal' if result.status == 0 else 'time limit'}; best plan {result.fun:.4f}) -> misses at least {value:.4f}",
              flush=True)
        best = max(best, value)
    return cds, budget, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--eps", type=float, action="append", help="expected misses allowed (repeatable)")
    parser.add_argument("--connected", action="store_true")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--source", type=int, default=0, help="the source's position in the component (--connected)")
    parser.add_argument("--budget", type=float, metavar="RATIO",
                        help="instead: a lower bound on the expected misses of any scheme spending RATIO x the greedy CDS on average")
    parser.add_argument("--slope", type=float, action="append", help="Lagrange slopes to try with --budget (repeatable)")
    args = parser.parse_args()
    for path in args.graphs:
        if args.budget:
            cds, budget, best = envelope(path, args.budget, args.slope or [0.002, 0.005, 0.01, 0.02],
                                         connected=args.connected, seconds=args.seconds, source=args.source)
            print(f"{path}{' connected, source #%d' % args.source if args.connected else ''}: spending {args.budget}x CDS "
                  f"({budget:.1f} tx) per broadcast on average, any scheme misses at least {best:.4f} nodes per broadcast",
                  flush=True)
            continue
        for eps in args.eps or [0.023]:
            started = time.time()
            cds, result = bound(path, eps, connected=args.connected, seconds=args.seconds, source=args.source)
            best = result.fun
            lower = getattr(result, "mip_dual_bound", None)
            status = "optimal" if result.status == 0 else "time limit"
            print(f"{path} eps={eps}{' connected' if args.connected else ''}: CDS {cds}; "
                  f"best plan {best:.0f} tx ({best / cds:.2f}x CDS), lower bound {lower:.1f} ({lower / cds:.2f}x), "
                  f"{status} after {time.time() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
