"""Bandwidth sharing for the level-1 timing model: a max-min fair allocator (progressive filling,
vectorised over time buckets) and the calendar of bytes each shared resource carries per bucket.

A resource never carries more than capacity * bucket bytes in a bucket (so no timing built on it
beats PLATE.md's level-0 bound); the flows allocated together share each bucket max-min fairly;
flows allocated later take what earlier ones left (FIFO between allocations, gaps are filled)."""

from __future__ import annotations

import numpy as np

MAX_WINDOW = 1024  # buckets looked at per allocation pass; longer transfers take more passes


# ---- max-min fair sharing --------------------------------------------------------------------------


def _waterfill(
    cap: np.ndarray,
    idx: np.ndarray,
    col: np.ndarray,
    demand: np.ndarray,
    rounds: int = 6,
    spread: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair allocation by progressive filling, every time bucket at once.

    cap [R, S]: capacity of each resource in each bucket (a row of inf for padding); idx [F, J, K]:
    the flat cell (r * S + s) flow f uses through its resource j in its k-th bucket; col [F, K]: that
    bucket's column s; demand [F, K]: the flow's cap there -> alloc [F, K].

    Each round raises every live flow of a bucket by the same amount, the smallest residual share
    of any resource in the bucket (capped by the flow's remaining demand); flows on a saturated
    resource or at their demand freeze. Every round is feasible; a bottleneck saturates each round.
    After ``rounds`` the live flows take their smallest share (feasible, slightly below max-min)."""
    F, J, K = idx.shape
    S, N = cap.shape[1], cap.size
    flat = idx.reshape(-1)
    if spread is None:  # the (f, k) of every entry of idx
        spread = np.broadcast_to(np.arange(F * K).reshape(F, 1, K), (F, J, K)).reshape(-1)

    def per_cell(x):
        return np.bincount(flat, weights=x.reshape(-1)[spread], minlength=N)

    cap = cap.reshape(-1)
    if (per_cell(demand) <= cap * (1 + 1e-12)).all():
        return demand.copy()
    alloc = np.zeros_like(demand)
    head = demand.copy()
    rem = cap.copy()
    live = head > 0
    tol = 1e-9 * np.where(np.isfinite(cap), cap, 0.0)
    for i in range(rounds + 1):
        n = per_cell(live.astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(n > 0, rem / n, np.inf)  # no live flow: no limit
        if i < rounds:
            level = share.reshape(-1, S).min(axis=0)[col]
        else:  # out of rounds: everyone takes the smallest share of its own resources
            level = np.minimum.reduce(share[idx], axis=1)
        give = np.minimum(level, head)
        give[~live] = 0.0
        alloc += give
        head -= give
        rem = np.maximum(rem - per_cell(give), 0.0)
        live &= (head > 1e-9 * demand) & ~np.logical_or.reduce((rem <= tol)[idx], axis=1)
        if not live.any():
            break
    return alloc


def max_min_fair(capacity, flows, demand=None) -> np.ndarray:
    """Max-min fair rates: capacity [R] per resource, flows = list of resource-index lists,
    optional per-flow demand caps. Returns one rate per flow."""
    cap = np.append(np.asarray(capacity, dtype=np.float64), np.inf)
    J = max((len(f) for f in flows), default=1) or 1
    res = np.full((len(flows), J), len(cap) - 1, dtype=np.int64)
    for i, f in enumerate(flows):
        res[i, : len(f)] = f
    dem = np.full(len(flows), np.inf) if demand is None else np.asarray(demand, np.float64).reshape(-1)
    dem = np.minimum(dem, cap[res].min(axis=1))[:, None]  # finite caps
    col = np.zeros((len(flows), 1), dtype=np.int64)
    return _waterfill(cap[:, None], res[:, :, None], col, dem, rounds=len(cap) + len(flows) + 1)[:, 0]


# ---- the bandwidth calendar ---------------------------------------------------------------------------


class Calendar:
    """Bytes committed per shared resource per time bucket; allocates a step's flows into it."""

    def __init__(self, capacity: np.ndarray, bucket: float):
        self.cap = np.asarray(capacity, dtype=np.float64)  # bytes per cycle
        self.bucket = float(bucket)
        self.base = 0  # bucket index of column 0 of ``used``
        self.used = np.zeros((len(self.cap), 1024))

    def _grow(self, k_end: int) -> None:
        need = k_end - self.base
        if need > self.used.shape[1]:
            n = max(need, 2 * self.used.shape[1])
            self.used = np.concatenate([self.used, np.zeros((len(self.cap), n - self.used.shape[1]))], axis=1)

    def forget_before(self, time: float) -> None:
        """No flow will start before ``time`` again: drop the buckets before it (bounds memory)."""
        k = int(time // self.bucket) - self.base
        if k > self.used.shape[1] // 2:
            self.used = np.concatenate([self.used[:, k:], np.zeros((len(self.cap), k))], axis=1)
            self.base += k

    def transfer(self, start, nbytes, res, group, engine_rate: float) -> np.ndarray:
        """End times of flows starting at ``start`` moving ``nbytes`` over shared resources ``res``
        [F, J] (-1 padded); the flows of one ``group`` (one DMA) split its engine's ``engine_rate``."""
        R, dl = len(self.cap), self.bucket
        res = res[:, (res >= 0).any(axis=0)] if res.shape[1] > 1 else res  # drop all-padding columns
        res = np.where(res >= 0, res, R)  # padding: the infinite row R
        J = res.shape[1]
        capf = np.append(self.cap, np.inf)
        a, b = np.array(start, dtype=np.float64), np.array(nbytes, dtype=np.float64)
        # the engine split evenly over its flows; no flow outruns its slowest resource
        rate = np.minimum(engine_rate / np.bincount(group)[group], capf[res].min(axis=1))
        n = np.maximum(np.bincount(res.reshape(-1), minlength=R + 1), 1)
        est = b / np.minimum(rate, (capf / n)[res].min(axis=1))  # duration if the flows split fairly
        ends = np.zeros(len(a))
        todo = np.arange(len(a))
        grow = 2  # a generous first window: a pass costs about the same for short windows
        while todo.size:
            fa, fb, fr = a[todo], b[todo], res[todo]
            F = len(todo)
            # the window fits the typical flow; the longer ones continue in later (smaller) passes
            K = int(min(grow * (np.ceil(np.median(est[todo]) / dl) + 2), MAX_WINDOW))
            kf0 = (fa // dl).astype(np.int64)
            kabs = kf0[:, None] + np.arange(K)  # each flow's own window of buckets
            self._grow(int(kabs[:, -1].max()) + 1)
            kmin = int(kf0.min())
            if kf0.max() - kmin <= K:  # windows overlap: a dense range of buckets
                cols, col = np.arange(kmin, kmin + int(kf0.max()) - kmin + K), kabs - kmin
            else:  # cores far apart in time: only the buckets some flow looks at
                cols, col = np.unique(kabs, return_inverse=True)
                col = col.reshape(F, K)
            S = len(cols)
            lo = np.maximum(fa[:, None], kabs * dl)
            ell = (kabs + 1) * dl - lo  # active cycles in each bucket
            idx = fr[:, :, None] * S + col[:, None, :]
            spread = np.broadcast_to(np.arange(F * K).reshape(F, 1, K), (F, J, K)).reshape(-1)
            # a cell's capacity: what the calendar has left, and no more than its capacity over the
            # part of the bucket some flow of this step is active in (first buckets are partial)
            active = np.zeros((R + 1) * S)
            active[idx[:, :, 1:].reshape(-1)] = dl
            np.maximum.at(active, idx[:, :, 0].reshape(-1), np.repeat(ell[:, 0], J))
            cap = np.empty((R + 1, S))
            cap[:R] = np.minimum(
                self.cap[:, None] * dl - self.used[:, cols - self.base],
                self.cap[:, None] * active.reshape(R + 1, S)[:R],
            )
            np.maximum(cap, 0.0, out=cap)
            cap[R] = np.inf
            demand = rate[todo, None] * ell
            alloc = _waterfill(cap, idx, col, demand, spread=spread)
            cum, fin = _reach(alloc, fb)
            if fin.min() < min(fin.max(), K):  # peers that finish early free their share: once more
                alloc = _waterfill(cap, idx, col, demand * (np.arange(K) <= fin[:, None]), spread=spread)
                cum, fin = _reach(alloc, fb)
            done = fin < K
            rows = np.arange(F)
            fc = np.minimum(fin, K - 1)
            cum_before = cum[rows, fc] - alloc[rows, fc]
            kept = alloc * (np.arange(K) < fin[:, None])
            kept[rows[done], fin[done]] = fb[done] - cum_before[done]
            add = np.bincount(idx.reshape(-1), weights=kept.reshape(-1)[spread], minlength=cap.size)
            self.used[:, cols - self.base] += add.reshape(R + 1, S)[:R]
            if done.any():
                d, kf = rows[done], fin[done]
                t = lo[d, kf] + ell[d, kf] * (fb[d] - cum_before[d]) / alloc[d, kf]
                # a flow cannot finish before its last bucket's committed bytes could drain
                gr = fr[d]
                g = np.minimum(gr, R - 1)
                drain = np.where(gr < R, self.used[g, kabs[d, kf][:, None] - self.base] / self.cap[g], 0.0)
                ends[todo[d]] = np.maximum(t, kabs[d, kf] * dl + drain.max(axis=1))
            nd = rows[~done]
            b[todo[nd]] = fb[nd] - cum[nd, K - 1]
            a[todo[nd]] = (kf0[nd] + K) * dl
            todo = todo[nd]
            grow *= 4
        return ends


def _reach(alloc: np.ndarray, need: np.ndarray):
    """(cumulative allocation, first bucket where it reaches the need or K if it never does)."""
    cum = np.cumsum(alloc, axis=1)
    hit = cum >= need[:, None] * (1 - 1e-12)
    return cum, np.where(hit[:, -1], hit.argmax(axis=1), alloc.shape[1])
