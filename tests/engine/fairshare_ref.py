#!/usr/bin/env python3
"""fairshare_ref.py: a second implementation of the fair-share division,
written from docs/fairshare.md alone (the section "The division, exactly"),
and a property test that compares it with the engine on random queue trees.

The engine's side is build/tests/engine/fairshare-dump, which builds each tree
in a fresh engine and prints every queue's fair share. For every random tree
(over-committed deserved quotas, weights 0 to 5, limits at every level,
priorities, fractions and gangs) the test checks that:
  - the engine's shares equal this implementation's, to the rounding unit
    (one milli-GPU);
  - one more milli-GPU of one queue's deserved quota moves no exact share by
    more than one milli-GPU (exact: this implementation in rational numbers,
    without rounding), and no engine share by more than the rounding of
    the levels above it allows (one unit per split, see ROUNDING_SLACK).

Usage: fairshare_ref.py DUMP_PROGRAM [TREES] [SEED]; prints TAP.
"""

import random
import subprocess
import sys
from fractions import Fraction

UNLIMITED = None


# ---- The reference, from docs/fairshare.md ----------------------------------


class Queue:
    def __init__(self, name, parent, deserved, limit, weight, priority):
        self.name = name
        self.parent = parent
        self.configured = deserved
        self.limit = limit  # None: unlimited
        self.weight = weight
        self.priority = priority
        self.children = []
        self.asks = 0
        # Filled in by the division.
        self.deserved = 0
        self.want = 0
        self.share = 0


def child_order(queues):
    """Priority descending, then name ascending (byte-wise)."""
    return sorted(queues, key=lambda q: (-q.priority, q.name.encode()))


def effective_deserved(q):
    """Unset (0) deserved of a parent: the sum of its children's."""
    total = sum(effective_deserved(c) for c in q.children)
    q.deserved = total if q.configured == 0 and q.children else q.configured
    return q.deserved


def compute_want(q):
    if q.children:
        w = sum(compute_want(c) for c in q.children)
    else:
        w = q.asks
    q.want = w if q.limit is None else min(w, q.limit)
    return q.want


def split(amount, weights, exact):
    """Divides amount in proportion to weights; in integers, the units left
    over go to the largest remainders, ties to the earlier entry."""
    total = sum(weights)
    if exact:
        return [Fraction(amount) * w / total for w in weights]
    parts = [amount * w // total for w in weights]
    rems = [amount * w % total for w in weights]
    left = amount - sum(parts)
    order = sorted(range(len(weights)), key=lambda i: (-rems[i], i))
    for i in order[:left]:
        parts[i] += 1
    return parts


def fill(amount, caps, weights, exact):
    """Water-fills amount among entries with caps and weights (in order);
    returns (what each received, what is left)."""
    got = [0] * len(caps)
    is_open = [weights[i] > 0 and caps[i] > 0 for i in range(len(caps))]
    while amount > 0 and any(is_open):
        idx = [i for i in range(len(caps)) if is_open[i]]
        wsum = sum(weights[i] for i in idx)
        done = None
        for i in idx:
            if (caps[i] - got[i]) * wsum <= amount * weights[i]:
                done = i
                break
        if done is not None:
            amount -= caps[done] - got[done]
            got[done] = caps[done]
            is_open[done] = False
            continue
        parts = split(amount, [weights[i] for i in idx], exact)
        for i, p in zip(idx, parts):
            got[i] += p
        amount = 0
    return got, amount


def divide(amount, children, exact):
    kids = child_order(children)
    if not kids:
        return
    d = [min(k.deserved, k.want) for k in kids]
    if sum(d) <= amount:
        got = list(d)
    else:
        got, _ = fill(amount, d, [k.deserved for k in kids], exact)
    left = amount - sum(got)
    i = 0
    while i < len(kids):
        j = i
        while j < len(kids) and kids[j].priority == kids[i].priority:
            j += 1
        group = range(i, j)
        caps = [kids[g].want - got[g] for g in group]
        more, left = fill(left, caps, [kids[g].weight for g in group], exact)
        for g, m in zip(group, more):
            got[g] += m
        i = j
    for k, g in zip(kids, got):
        k.share = g
        divide(g, k.children, exact)


def reference(tree, exact=False):
    """Fair shares {name: share} of tree (a dict from random_tree)."""
    queues = {}
    for name, parent, des, lim, weight, prio in tree["queues"]:
        queues[name] = Queue(name, parent, des, lim, weight, prio)
    roots = []
    for q in queues.values():
        if q.parent is None:
            roots.append(q)
        else:
            queues[q.parent].children.append(q)
    for i, (qname, milli, tasks) in enumerate(tree["work"]):
        if i not in tree.get("refused", ()):
            queues[qname].asks += milli * tasks
    for r in roots:
        effective_deserved(r)
        compute_want(r)
    divide(tree["pool"] * 1000, roots, exact)
    return {name: q.share for name, q in queues.items()}


# ---- Random trees -------------------------------------------------------------


def random_tree(rng):
    nodes = rng.randint(1, 4)
    pool = 8 * nodes
    queues = []  # (name, parent, deserved, limit, weight, priority)
    limits = {}

    def add(name, parent, depth):
        # Deserved quotas often add up to more than the pool (over-commit).
        des = rng.choice([0, 0, rng.randint(1, 8) * 1000, rng.randint(1, 12000)])
        lim = None
        if rng.random() < 0.35:
            lim = des + rng.choice([0, rng.randint(0, 8000)])
        weight = rng.randint(0, 5)
        prio = rng.choice([0, 0, 0, 1, 2])
        queues.append((name, parent, des, lim, weight, prio))
        limits[name] = (parent, lim)
        if depth < 2 and rng.random() < 0.5:
            for c in range(rng.randint(1, 3)):
                add("%s_%d" % (name, c), name, depth + 1)

    for t in range(rng.randint(1, 4)):
        add("q%d" % t, None, 0)
    parents = {p for _, p, _, _, _, _ in queues if p is not None}
    leaves = [q[0] for q in queues if q[0] not in parents]
    work = []
    for _ in range(rng.randint(0, 14)):
        leaf = rng.choice(leaves)
        kind = rng.random()
        if kind < 0.4:
            milli = rng.randint(1, 9) * 100 + rng.choice([0, rng.randint(1, 99)])
        else:
            milli = rng.randint(1, 4) * 1000
        tasks = 1 if rng.random() < 0.6 else rng.randint(2, 6)
        work.append((leaf, milli, tasks))
    return {"nodes": nodes, "pool": pool, "queues": queues, "work": work}


def tree_text(tree):
    per = tree["pool"] // tree["nodes"]
    lines = ["node n%d %d" % (i, per) for i in range(tree["nodes"])]
    for name, parent, des, lim, weight, prio in tree["queues"]:
        lines.append(
            "queue %s %s %d %s %d %d"
            % (name, parent or "-", des, "-" if lim is None else lim, weight, prio)
        )
    for q, milli, tasks in tree["work"]:
        lines.append("work %s %d %d" % (q, milli, tasks))
    lines.append("end")
    return "\n".join(lines) + "\n"


def run_engine(dump, trees):
    out = subprocess.run(
        [dump], input="".join(tree_text(t) for t in trees), capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit("fairshare-dump failed: " + out.stderr)
    results, cur, refused = [], {}, set()
    for line in out.stdout.splitlines():
        f = line.split()
        if f[0] == "refused":
            refused.add(int(f[1]))
        elif f[0] == "share":
            cur[f[1]] = int(f[2])
        elif f[0] == "end":
            results.append((cur, refused))
            cur, refused = {}, set()
    return results


def bumps(tree, rng, most):
    """Copies of the tree, each with one queue's deserved quota one milli-GPU
    more (a queue whose deserved is set, so that the 'unset means the
    children's sum' default does not change, and whose limit allows it)."""
    cands = [
        i
        for i, (n, p, des, lim, w, pr) in enumerate(tree["queues"])
        if (des > 0 or not any(q[1] == n for q in tree["queues"]))
        and (lim is None or des + 1 <= lim)
    ]
    out = []
    for i in rng.sample(cands, min(most, len(cands))):
        qs = list(tree["queues"])
        n, p, des, lim, w, pr = qs[i]
        qs[i] = (n, p, des + 1, lim, w, pr)
        out.append((dict(tree, queues=qs), n))
    return out


# The smallest case once seen: C deserving 2.000 or 2.001 GPUs moved A's
# share by 1.6 GPUs.
SEEN = {
    "nodes": 1,
    "pool": 10,
    "queues": [
        ("A", None, 8000, None, 1, 0),
        ("B", None, 12000, None, 1, 0),
        ("C", None, 2000, None, 1, 0),
    ],
    "work": [("A", 1000, 10), ("C", 1000, 10)],
}


def depth_of(tree, name):
    parent = {q[0]: q[1] for q in tree["queues"]}
    d = 1
    while parent[name] is not None:
        name = parent[name]
        d += 1
    return d


# One more milli-GPU moves an exact share by at most one; rounding each
# proportional split moves an integer share by at most one unit more per
# level of the tree above and at it, each way.
def rounding_slack(tree, name):
    return 1 + 2 * depth_of(tree, name)


def main():
    dump = sys.argv[1]
    ntrees = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 42
    rng = random.Random(seed)
    trees = [SEEN] + [random_tree(rng) for _ in range(ntrees)]
    bumped = [bumps(t, rng, 4) for t in trees]
    engine = run_engine(dump, trees)
    engine_b = run_engine(dump, [b[0] for bs in bumped for b in bs])
    n = 0
    failures = 0

    def report(ok, name, detail=""):
        nonlocal n, failures
        n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
        if not ok:
            failures += 1
            print("# " + detail.replace("\n", "\n# "))

    worst_ref = worst_exact = worst_int = 0
    bad_ref = bad_exact = bad_int = None
    overcommitted = 0
    max_int = 0
    bi = 0
    for t, bs, (shares, refused) in zip(trees, bumped, engine):
        t["refused"] = refused
        ref = reference(t)
        if sum(q[2] for q in t["queues"] if q[1] is None) > t["pool"] * 1000:
            overcommitted += 1
        for name, s in ref.items():
            diff = abs(s - shares.get(name, -10**9))
            if diff > worst_ref:
                worst_ref, bad_ref = diff, (t, name, s, shares.get(name))
        ex0 = reference(t, exact=True)
        for tb, bumped_name in bs:
            shares_b, refused_b = engine_b[bi]
            bi += 1
            tb["refused"] = refused_b
            if refused_b != refused:
                continue  # a limit moved: not the same workloads
            ex1 = reference(tb, exact=True)
            for name in ex0:
                d = abs(ex1[name] - ex0[name])
                if d > worst_exact:
                    worst_exact, bad_exact = d, (t, bumped_name, name, ex0[name], ex1[name])
                di = abs(shares_b[name] - shares[name])
                max_int = max(max_int, di)
                if di > rounding_slack(t, name) and di > worst_int:
                    worst_int, bad_int = di, (t, bumped_name, name, shares[name], shares_b[name])

    report(ntrees >= 500 and overcommitted > ntrees // 10,
           "%d random trees, %d with top-level deserved over the pool" % (ntrees, overcommitted))
    report(worst_ref <= 1, "engine shares equal the reference's to one milli-GPU",
           "worst difference %s: %r" % (worst_ref, bad_ref and (tree_text(bad_ref[0]),) + bad_ref[1:]))
    report(worst_exact <= 1, "one more milli-GPU of deserved moves no exact share by more than one",
           "worst %s: %r" % (worst_exact, bad_exact and (tree_text(bad_exact[0]),) + bad_exact[1:]))
    report(bad_int is None, "nor an engine share by more than rounding allows",
           "worst %s: %r" % (worst_int, bad_int and (tree_text(bad_int[0]),) + bad_int[1:]))
    print("# worst differences: engine vs reference %s, exact shift %s, engine shift %s"
          % (worst_ref, worst_exact, max_int))
    print("1..%d" % n)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
