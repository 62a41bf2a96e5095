#!/usr/bin/env python3
"""Independent reference computation of the metric formulas of docs/metrics.md.

Written from the page's definitions, not from the Go code: percentiles are Python's
statistics.quantiles(method='inclusive') (Hyndman-Fan type 7), means statistics.fmean. It draws
deterministic inputs, computes what each row's metrics must be, and writes both to the golden
file that schemas/metric's TestGolden compares the catalogue against (Go needs no Python).

    python3 testdata/reference.py testdata/golden.json     (or: go generate ./schemas/metric)
"""
import json
import random
import statistics
import sys


def pct(xs, p):
    """Type-7 p-quantile of xs for p in {0.5, 0.9, 0.95, 0.99, 0.999} via statistics.quantiles."""
    s = sorted(xs)
    if len(s) == 1:
        return s[0]  # Python 3.11's quantiles needs two points; type 7 of one sample is itself
    n = 1000 if p == 0.999 else 100
    return statistics.quantiles(s, n=n, method="inclusive")[round(p * n) - 1]


def dist(out, name, unit, direction, formula, xs):
    if not xs:
        return
    aggs = [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)]
    if len(xs) >= 1000:
        aggs.append(("p99.9", 0.999))
    for agg, p in aggs:
        out.append(m(f"{name}.{agg}", pct(xs, p), unit, agg, direction, formula, len(xs)))
    out.append(m(f"{name}.min", min(xs), unit, "min", direction, formula, len(xs)))
    out.append(m(f"{name}.max", max(xs), unit, "max", direction, formula, len(xs)))
    out.append(m(f"{name}.mean", statistics.fmean(xs), unit, "mean", direction, formula, len(xs)))


def m(name, value, unit, agg, direction, formula, samples):
    return {"name": name, "value": value, "unit": unit, "aggregation": agg,
            "direction": direction, "formula": formula, "samples": samples}


LOWER, HIGHER, NONE = "lower_is_better", "higher_is_better", "none"


def ms(ns):
    return ns / 1e6


def row(spec, reqs):
    """The row's metrics and fidelity from its measured requests (index order)."""
    ok = [r for r in reqs if r["error"] is None and r["send"] is not None and r["end"] is not None and r["usage"] is not None]
    out = []
    ttft, ttft_s, ttfb, e2e, e2e_s, tpot, rate, icl, icl_max, chunk = ([] for _ in range(10))
    for r in ok:
        N = r["usage"][0]
        c = r["content"]
        e2e.append(ms(r["end"] - r["send"]))
        e2e_s.append(ms(r["end"] - r["sched"]))
        if r["hdr"] is not None:
            ttfb.append(ms(r["hdr"] - r["send"]))
        if not c:
            continue
        ttft.append(ms(c[0] - r["send"]))
        ttft_s.append(ms(c[0] - r["sched"]))
        if N >= 2:
            tpot.append(ms(r["end"] - c[0]) / (N - 1))
            if r["end"] > c[0]:
                rate.append((N - 1) / ((r["end"] - c[0]) / 1e9))
        gaps = [ms(b - a) for a, b in zip(c, c[1:])]
        icl.extend(gaps)
        if gaps:
            icl_max.append(max(gaps))
        chunk.append(N / len(c))
    for name, unit, d, f, xs in [
            ("ttft_ms", "ms", LOWER, "ttft.v1", ttft), ("ttft_sched_ms", "ms", LOWER, "ttft_sched.v1", ttft_s),
            ("ttfb_ms", "ms", LOWER, "ttfb.v1", ttfb), ("e2e_ms", "ms", LOWER, "e2e.v1", e2e),
            ("e2e_sched_ms", "ms", LOWER, "e2e_sched.v1", e2e_s), ("tpot_ms", "ms", LOWER, "tpot.v1", tpot),
            ("decode_rate", "tokens/s", HIGHER, "decode_rate.v1", rate), ("icl_ms", "ms", LOWER, "icl.v1", icl),
            ("icl_max_ms", "ms", LOWER, "icl_max.v1", icl_max)]:
        dist(out, name, unit, d, f, xs)
    # Reasoning: the first reasoning_events token events of a request are reasoning; TTFT to the
    # first content token when a success reasoned; the output split when every success's usage
    # states its reasoning tokens.
    if any(r.get("reasoning_events", 0) > 0 for r in ok):
        dist(out, "ttft_content_ms", "ms", LOWER, "ttft_content.v1",
             [ms(r["content"][r.get("reasoning_events", 0)] - r["send"]) for r in ok if len(r["content"]) > r.get("reasoning_events", 0)])
    counted = bool(ok) and all(r.get("reasoning") is not None for r in ok)
    # Tool calls: the token events of a request from tool_first on are tool-call deltas; TTFT to
    # the first of them over the successes that had one; the validity fraction over the answered
    # requests (no error, or only a failed assertion) that made a call, [calls, valid], a request
    # counting as valid when every one of its calls is.
    dist(out, "ttft_tool_call_ms", "ms", LOWER, "ttft_tool_call.v1",
         [ms(r["content"][r["tool_first"]] - r["send"]) for r in ok if r.get("tool_first") is not None])
    answered = [r for r in reqs if r["error"] in (None, "assertion") and r["send"] is not None and r["end"] is not None
                and r["usage"] is not None and r.get("calls", [0, 0])[0] > 0]
    if answered:
        out.append(m("tool_call_validity", sum(1 for r in answered if r["calls"][1] == r["calls"][0]) / len(answered),
                     "fraction", "mean", HIGHER, "tool_call_validity.v1", len(answered)))
    if chunk:
        out.append(m("chunking_factor.mean", statistics.fmean(chunk), "tokens/event", "mean", NONE, "chunking_factor.v1", len(chunk)))
    n = len(reqs)
    out.append(m("request_failures", n - len(ok), "requests", "count", LOWER, "request_failures.v1", n))
    for cls in sorted({r["error"] for r in reqs if r["error"] is not None}):
        k = sum(1 for r in reqs if r["error"] == cls)
        out.append(m("request_failures." + cls, k, "requests", "count", LOWER, "request_failures_by_class.v1", n))
    out_tok = sum(r["usage"][0] for r in ok)
    prompt_tok = sum(r["usage"][1] for r in ok)
    out.append(m("output_tokens.sum", out_tok, "tokens", "sum", NONE, "output_tokens.v1", len(ok)))
    if counted:
        reasoning_tok = sum(r["reasoning"] for r in ok)
        out.append(m("reasoning_tokens.sum", reasoning_tok, "tokens", "sum", NONE, "reasoning_tokens.v1", len(ok)))
        out.append(m("content_tokens.sum", out_tok - reasoning_tok, "tokens", "sum", NONE, "content_tokens.v1", len(ok)))
    out.append(m("prompt_tokens.sum", prompt_tok, "tokens", "sum", NONE, "prompt_tokens.v1", len(ok)))
    sends = [r["send"] for r in reqs if r["send"] is not None]
    ends = [r["end"] for r in reqs if r["end"] is not None]
    W = (max(ends) - min(sends)) / 1e9 if sends and ends and max(ends) > min(sends) else None
    slo = spec["slo"]

    def good(r):
        c = r["content"]
        if slo["ttft_ms"] > 0 and (not c or ms(c[0] - r["sched"]) > slo["ttft_ms"]):
            return False
        if slo["e2e_ms"] > 0 and ms(r["end"] - r["sched"]) > slo["e2e_ms"]:
            return False
        if slo["icl_ms"] > 0 and any(ms(b - a) > slo["icl_ms"] for a, b in zip(c, c[1:])):
            return False
        return True
    goods = [r for r in ok if good(r)]
    if W is not None:
        out.append(m("window_s", W, "s", "exact", NONE, "request_window.v1", n))
        out.append(m("request_throughput", len(ok) / W, "requests/s", "rate", HIGHER, "request_throughput.v1", len(ok)))
        out.append(m("output_throughput_window", out_tok / W, "tokens/s", "rate", HIGHER, "output_throughput_window.v1", len(ok)))
        if counted:
            out.append(m("content_throughput_window", (out_tok - reasoning_tok) / W, "tokens/s", "rate", HIGHER, "content_throughput_window.v1", len(ok)))
        out.append(m("total_throughput_window", (out_tok + prompt_tok) / W, "tokens/s", "rate", HIGHER, "total_throughput_window.v1", len(ok)))
        out.append(m("slo_goodput", len(goods) / W, "requests/s", "rate", HIGHER, "slo_goodput.v1", n))
        out.append(m("slo_goodput_tokens", sum(r["usage"][0] for r in goods) / W, "tokens/s", "rate", HIGHER, "slo_goodput_tokens.v1", n))
    if n:
        out.append(m("slo_good_fraction", len(goods) / n, "fraction", "mean", HIGHER, "slo_good_fraction.v1", n))
    sent = [r for r in reqs if r["send"] is not None]
    lags = [ms(r["send"] - r["sched"]) for r in sent]
    dist(out, "schedule_lag_ms", "ms", LOWER, "schedule_lag.v1", lags)
    if spec["loop"] == "closed":
        first = [r["send"] for r in reqs[:spec["concurrency"]] if r["send"] is not None]
        if first:
            out.append(m("dispatch_spread_ms", ms(max(first) - min(first)), "ms", "exact", LOWER, "dispatch_spread.v1", len(first)))

    def rate_of(ts):
        return (len(ts) - 1) / ((max(ts) - min(ts)) / 1e9) if len(ts) >= 2 and max(ts) > min(ts) else 0.0
    achieved = rate_of([r["send"] for r in sent])
    if len(sent) >= 2:
        out.append(m("achieved_rate", achieved, "requests/s", "rate", NONE, "achieved_rate.v1", len(sent)))
    # Prefix cache: over the successes that reported cached prompt tokens.
    rep = [r for r in ok if r.get("cached") is not None]
    if rep and sum(r["usage"][1] for r in rep) > 0:
        out.append(m("prefix_cache_hit_fraction", sum(r["cached"] for r in rep) / sum(r["usage"][1] for r in rep),
                     "fraction", "mean", NONE, "prefix_cache_hit_fraction.v1", len(rep)))
    # Multi-turn sessions (docs/metrics.md "Sessions"): requests carrying "session": [id, turn].
    sess = [r for r in ok if r.get("session") is not None]
    for k in sorted({r["session"][1] for r in sess if r["content"]}):
        xs = [ms(r["content"][0] - r["send"]) for r in sess if r["session"][1] == k and r["content"]]
        out.append(m(f"ttft_p50_ms.turn{k}", pct(xs, 0.5), "ms", "p50", LOWER, "ttft_by_turn.v1", len(xs)))
    ids = []
    for r in reqs:
        if r.get("session") is not None and r["session"][0] not in ids:
            ids.append(r["session"][0])
    dur, tok = [], []
    for sid in ids:
        turns = [r for r in reqs if r.get("session") is not None and r["session"][0] == sid]
        if any(r not in ok for r in turns):
            continue
        dur.append(ms(max(r["end"] for r in turns) - min(r["sched"] for r in turns)))
        tok.append(float(sum(r["usage"][0] + r["usage"][1] for r in turns)))
    dist(out, "session_duration_ms", "ms", LOWER, "session_duration.v1", dur)
    dist(out, "session_tokens", "tokens", NONE, "session_tokens.v1", tok)
    # Client fidelity.
    own = lags
    if spec["loop"] == "open":
        own = []
        for v in sent:
            busy = sum(1 for u in sent if u is not v and u["send"] <= v["sched"] and (u["close"] is None or u["close"] > v["sched"]))
            if busy < spec["concurrency"]:
                own.append(ms(v["send"] - v["sched"]))
    degraded = bool(own) and pct(own, 0.99) > 1.0
    if spec["loop"] == "open":
        sched = rate_of([r["sched"] for r in sent])
        degraded = degraded or (bool(lags) and pct(lags, 0.99) > 10.0) or (sched > 0 and achieved < 0.9 * sched)
    fid = {"schedule_lag_p50_ms": max(0.0, pct(lags, 0.5)) if lags else 0.0,
           "schedule_lag_p99_ms": max(0.0, pct(lags, 0.99)) if lags else 0.0,
           "schedule_lag_max_ms": max(0.0, max(lags)) if lags else 0.0,
           "achieved_rate": achieved, "degraded": degraded}
    # Achieved concurrency over [min t_send, max t_end].
    edges = []
    for r in sent:
        end = r["close"] if r["close"] is not None else r["end"]
        if end is not None and end > r["send"]:
            edges += [(r["send"], 1), (end, -1)]
    if edges and W is not None:
        lo, hi = min(sends), max(ends)
        edges.sort()
        cur = peak = 0
        area = 0
        prev = edges[0][0]
        for t, d in edges:
            a, b = max(prev, lo), min(t, hi)
            if b > a:
                area += cur * (b - a)
            prev = t
            cur += d
            peak = max(peak, cur)
        fid["in_flight_peak"] = peak
        fid["in_flight_mean"] = area / (hi - lo)
    return {"window_seconds": W or 0.0, "requests": n, "successes": len(ok), "metrics": out, "fidelity": fid}


def device(samples, start, end, tokens):
    """The device metrics and flags of docs/metrics.md ("Device telemetry") over [start, end]."""
    devs = sorted({x["device"] for x in samples})
    energy, any_energy, throttled, flags = 0.0, False, 0.0, set()
    for d in devs:
        xs = [x for x in samples if x["device"] == d]

        def interp(t, key):
            for a, b in zip(xs, xs[1:]):
                if a["t"] <= t <= b["t"]:
                    if a["t"] == b["t"]:
                        return a[key]
                    return a[key] + (b[key] - a[key]) * (t - a["t"]) / (b["t"] - a["t"])
            return xs[-1][key]
        if len(xs) >= 2 and xs[0]["t"] <= start and xs[-1]["t"] >= end:
            if all(x["energy_j"] is not None for x in xs):
                e = interp(end, "energy_j") - interp(start, "energy_j")
                if e >= 0:
                    energy, any_energy = energy + e, True
            elif all(x["power_w"] is not None for x in xs):
                pts = [(start, interp(start, "power_w"))] + [(x["t"], x["power_w"]) for x in xs if start < x["t"] < end] + [(end, interp(end, "power_w"))]
                energy += sum((p + q) / 2 * (u - t) / 1e9 for (t, p), (u, q) in zip(pts, pts[1:]))
                any_energy = True
        th = sum(max(0, min(b["t"], end) - max(a["t"], start)) / 1e9 for a, b in zip(xs, xs[1:]) if a["throttled"])
        throttled = max(throttled, th)
        inside = [x for x in xs if start <= x["t"] <= end]
        if any(x["throttled"] for x in inside):
            flags.add("throttled")
        eccs = [x["ecc"] for x in inside if x["ecc"] is not None]
        if eccs and eccs[0] != eccs[-1]:
            flags.add("ecc_uncorrected_changed")
        if any(x["xid"] for x in inside):
            flags.add("xid_event")
        if any(x["call_failed"] for x in inside):
            flags.add("telemetry_call_failed")
    values = {}
    if devs:
        if any_energy:
            values["device_energy_j"] = energy
            if tokens > 0:
                values["device_energy_per_output_token_j"] = energy / tokens
            values["device_power_mean_w"] = energy / ((end - start) / 1e9)
        values["device_throttled_seconds"] = throttled
    order = ["throttled", "ecc_uncorrected_changed", "xid_event", "telemetry_call_failed"]
    return {"values": values, "flags": [f for f in order if f in flags]}


def device_cases(rng):
    cases = []
    for k in range(12):
        samples = []
        for d in range(rng.randrange(1, 4)):
            t, e = rng.randrange(0, 400_000_000), rng.uniform(0, 1000)
            kind = rng.choice(["counter", "power", "both", "gap"])
            for _ in range(rng.randrange(1, 10)):
                e += rng.uniform(0, 80)
                samples.append({"device": d, "t": t,
                                "energy_j": round(e, 3) if kind in ("counter", "both") or (kind == "gap" and rng.random() < 0.5) else None,
                                "power_w": round(rng.uniform(50, 400), 2) if kind != "counter" else None,
                                "throttled": rng.random() < 0.3, "xid": rng.random() < 0.1, "call_failed": rng.random() < 0.1,
                                "ecc": rng.choice([None, 0, 0, 1])})
                t += rng.randrange(50_000_000, 400_000_000)
        start = rng.randrange(200_000_000, 800_000_000)
        end = start + rng.randrange(100_000_000, 1_500_000_000)
        tokens = rng.choice([0, 1, 500])
        cases.append({"samples": samples, "start": start, "end": end, "tokens": tokens, "want": device(samples, start, end, tokens)})
    return cases


def request(rng, sched, spread_ms, fail_rate):
    send = sched + int(rng.expovariate(1 / (spread_ms * 1e6)))
    hdr = send + rng.randrange(200_000, 3_000_000)
    k = rng.choice([0, 1, 1, 2, 3, 5, 8])
    content, t = [], hdr
    for _ in range(k):
        t += rng.randrange(0, 4_000_000)
        content.append(t)
    end = t + rng.randrange(0, 500_000)
    N = rng.choice([1, 2, 3, 16, 64]) if k else 0
    r = {"sched": sched, "send": send, "hdr": hdr if rng.random() > 0.05 else None, "end": end,
         "close": end + rng.randrange(0, 2_000_000) if rng.random() > 0.05 else None,
         "content": content, "usage": [N, rng.randrange(1, 300)], "error": None}
    if rng.random() < fail_rate:
        r["error"] = rng.choice(["timeout", "http_status", "truncated_stream"])
        r["usage"] = None
        if rng.random() < 0.5:
            r["end"] = None
        if rng.random() < 0.2:
            r["send"] = r["hdr"] = r["end"] = r["close"] = None
            r["content"] = []
    return r


def main(path):
    rng = random.Random(20261201)
    percentiles = []
    for n in [1, 2, 3, 4, 10, 11, 100, 999, 1000, 1001, 2500]:
        xs = [round(rng.lognormvariate(2, 1), 6) for _ in range(n)]
        want = {"p50": pct(xs, 0.5), "p90": pct(xs, 0.9), "p95": pct(xs, 0.95), "p99": pct(xs, 0.99),
                "min": min(xs), "max": max(xs), "mean": statistics.fmean(xs)}
        if n >= 1000:
            want["p99.9"] = pct(xs, 0.999)
        percentiles.append({"samples": xs, "want": want})
    rows = []
    cache_rng = random.Random(20261203)  # its own stream: the other rows' numbers do not move
    for i, (loop, conc, n, gap_ms, spread_ms, fail) in enumerate([
            ("closed", 1, 1, 0, 0.05, 0), ("closed", 2, 7, 0, 0.3, 0.3), ("closed", 4, 60, 1, 2, 0.1),
            ("closed", 8, 1200, 0.2, 0.4, 0.02), ("open", 4, 80, 5, 0.2, 0.05), ("open", 2, 120, 1, 30, 0),
            ("open", 1, 40, 50, 0.1, 0.1)]):
        reqs, sched = [], 0
        for k in range(n):
            sched += int(gap_ms * 1e6 * (k > 0))
            reqs.append(request(rng, sched, spread_ms, fail))
        if i in (1, 2, 4):
            # Some requests report cached prompt tokens (0 up to their prompt tokens).
            for r in reqs:
                if cache_rng.random() < 0.7:
                    r["cached"] = cache_rng.randrange(0, r["usage"][1] + 1) if r["usage"] else cache_rng.randrange(0, 50)
        slo = {"ttft_ms": rng.choice([0, 5, 20]), "e2e_ms": rng.choice([0, 30]), "icl_ms": rng.choice([0, 2.5])}
        spec = {"loop": loop, "concurrency": conc, "slo": slo}
        rows.append({"name": f"row{i}-{loop}-c{conc}-n{n}", "spec": spec, "requests": reqs, "want": row(spec, reqs)})
    # A session row (its own stream: the rows above do not move): 9 sessions of 1 to 4 turns,
    # closed loop at concurrency 3; turn k of a session is scheduled after turn k-1 ended.
    srng = random.Random(20261204)
    reqs = []
    for sid in range(9):
        sched = srng.randrange(0, 5_000_000)
        for k in range(srng.randrange(1, 5)):
            r = request(srng, sched, 0.2, 0.08)
            r["session"] = [f"session-{sid:03d}", k]
            reqs.append(r)
            sched = (r["end"] if r["end"] is not None else sched) + srng.randrange(0, 3_000_000)
    spec = {"loop": "closed", "concurrency": 3, "slo": {"ttft_ms": 0, "e2e_ms": 0, "icl_ms": 0}}
    rows.append({"name": "row7-sessions-c3", "spec": spec, "requests": reqs, "want": row(spec, reqs)})
    # A reasoning row (its own stream): each request's first token events are reasoning (up to
    # all of them), and its usage states reasoning tokens (at most its completion tokens).
    rrng = random.Random(20261205)
    reqs = []
    for k in range(30):
        r = request(rrng, k * 2_000_000, 0.3, 0.1)
        r["reasoning_events"] = rrng.randrange(0, len(r["content"]) + 1)
        r["reasoning"] = rrng.randrange(0, r["usage"][0] + 1) if r["usage"] else None
        reqs.append(r)
    spec = {"loop": "open", "concurrency": 4, "slo": {"ttft_ms": 0, "e2e_ms": 0, "icl_ms": 0}}
    rows.append({"name": "row8-reasoning-c4", "spec": spec, "requests": reqs, "want": row(spec, reqs)})
    # A tool-call row: most requests with content call tools from some token event on, some of
    # the calls invalid, some of those failing a tool_call assertion (the response kept).
    trng = random.Random(20261207)
    reqs = []
    for k in range(30):
        r = request(trng, k * 2_000_000, 0.3, 0.1)
        if r["content"] and r["usage"] is not None and trng.random() < 0.8:
            r["tool_first"] = trng.randrange(0, len(r["content"]))
            n = trng.randrange(1, 4)
            r["calls"] = [n, n if trng.random() < 0.7 else trng.randrange(0, n)]
            if r["error"] is None and r["calls"][1] < n and trng.random() < 0.5:
                r["error"] = "assertion"
        reqs.append(r)
    spec = {"loop": "closed", "concurrency": 2, "slo": {"ttft_ms": 0, "e2e_ms": 0, "icl_ms": 0}}
    rows.append({"name": "row9-tools-c2", "spec": spec, "requests": reqs, "want": row(spec, reqs)})
    devices = device_cases(random.Random(20261202))
    doc = {"generator": "schemas/metric/testdata/reference.py (Python statistics, type-7 quantiles)",
           "python": sys.version.split()[0], "percentiles": percentiles, "rows": rows, "devices": devices}
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "golden.json")
