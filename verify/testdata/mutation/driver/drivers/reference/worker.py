"""qualkit reference evidence worker: deterministic next-token logits of a tiny fixed model.

Standard library only; any python3 >= 3.8 runs it. The runner (qualrun) starts it as
[python3, /proc/self/fd/N, args...] inside a private network namespace, after creating the start
gate; the worker refuses to do anything unless the gate is valid. See docs/drivers.md.

Environment (set by the runner; nothing else is read):
  QUALKIT_START_GATE       the start gate: a regular single-link file, mode 0600, owned by this
                           uid, payload exactly "go\\n"; otherwise exit 3
  QUALKIT_DRIVER_REQUEST   the request (qualkit.driver-request.v1)
  QUALKIT_DRIVER_MODEL     the model file (format qualkit-reference-tiny-model, version 1)
  QUALKIT_DRIVER_OUTPUT    where to write the worker output (created exclusively)
  QUALKIT_DRIVER_CONTRACT  the result contract the output is for

Arguments:
  --mode next-token         float64 logits of the reference path: top tokens, candidate ranks,
                            logits digest (contract qualkit.next-token-result.v2)
  --mode path-attribution   every path the request names against the reference path: argmax,
                            cosine, max/mean absolute error, top-10 overlap, digests
                            (qualkit.path-attribution.v2)
  --mode layer-attribution  per-boundary errors of one candidate path against the reference path
                            (qualkit.layer-attribution.v2)
  --path ID                 next-token: the path whose logits are reported (default f64_reference)
  --candidate ID            layer-attribution: the compared path (default: the request's first path)
  --probe-connect PORT      before anything else, try to reach 127.0.0.1:PORT and 192.0.2.1:80;
                            reaching either is an isolation failure (exit 4)

Exit codes: 0 output written; 1 bad request, model or arguments; 3 start gate refused;
4 the network was reachable. Every number is computed with IEEE 754 +, -, *, / and sqrt only
(no libm transcendental functions), so the output bytes are the same on every platform.
"""

import hashlib
import json
import math
import os
import socket
import stat
import struct
import sys

GATE_PAYLOAD = b"go\n"
MAX_REQUEST_BYTES = 256 * 1024
MAX_MODEL_BYTES = 64 * 1024
MODEL_FORMAT = "qualkit-reference-tiny-model"
WORKER_OUTPUT = "qualkit.driver-worker-output.v1"
CONTRACTS = {
    "next-token": "qualkit.next-token-result.v2",
    "path-attribution": "qualkit.path-attribution.v2",
    "layer-attribution": "qualkit.layer-attribution.v2",
}
REFERENCE_PATH = "f64_reference"


class Refused(Exception):
    """An input the worker will not evaluate; exit code in .code."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- start gate


def check_gate(path):
    """Refuse unless path is a regular single-link file, mode 0600, ours, holding exactly go\\n."""
    if not path:
        raise Refused("start gate: QUALKIT_START_GATE is not set; the runner starts workers only through a gate", 3)
    try:
        before = os.lstat(path)
    except OSError as e:
        raise Refused("start gate %s: %s; the worker must not start before the runner opens the gate" % (path, e.strerror), 3)
    if not stat.S_ISREG(before.st_mode):
        raise Refused("start gate %s: not a regular file" % path, 3)
    if before.st_nlink != 1:
        raise Refused("start gate %s: %d links, want exactly 1" % (path, before.st_nlink), 3)
    if stat.S_IMODE(before.st_mode) != 0o600:
        raise Refused("start gate %s: mode %04o, want 0600" % (path, stat.S_IMODE(before.st_mode)), 3)
    if before.st_uid != os.getuid():
        raise Refused("start gate %s: owned by uid %d, not %d" % (path, before.st_uid, os.getuid()), 3)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Refused("start gate %s: %s" % (path, e.strerror), 3)
    try:
        now = os.fstat(fd)
        payload = os.read(fd, len(GATE_PAYLOAD) + 1)
    finally:
        os.close(fd)
    if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
        raise Refused("start gate %s: replaced while being read" % path, 3)
    if payload != GATE_PAYLOAD:
        raise Refused("start gate %s: payload %r, want %r" % (path, payload, GATE_PAYLOAD), 3)


# ---------------------------------------------------------------- inputs


def strict_pairs(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise Refused("duplicate key %r" % k)
        seen[k] = v
    return seen


def reject_constant(name):
    raise Refused("non-finite number %s" % name)


def read_json(path, limit, what):
    if not path:
        raise Refused("%s: no path in the environment" % what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Refused("%s %s: %s" % (what, path, e.strerror))
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Refused("%s %s: larger than %d bytes" % (what, path, limit))
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=strict_pairs, parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise Refused("%s %s: %s" % (what, path, e))


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def load_request(path):
    r = read_json(path, MAX_REQUEST_BYTES, "request")
    if not isinstance(r, dict) or r.get("schema") != "qualkit.driver-request.v1":
        raise Refused("request %s: not a qualkit.driver-request.v1" % path)
    ids = r.get("input_token_ids")
    if not isinstance(ids, list) or not 1 <= len(ids) <= 4096 or not all(is_int(t) and t >= 0 for t in ids):
        raise Refused("request %s: input_token_ids must be 1..4096 non-negative integers" % path)
    cands = r.get("candidates", [])
    if not isinstance(cands, list) or not all(isinstance(c, dict) and isinstance(c.get("label"), str) and is_int(c.get("token_id")) for c in cands):
        raise Refused("request %s: candidates must be objects with a label and a token_id" % path)
    paths = r.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise Refused("request %s: paths must be a list of path ids" % path)
    if not isinstance(r.get("id"), str):
        raise Refused("request %s: no id" % path)
    return r


def load_model(path):
    m = read_json(path, MAX_MODEL_BYTES, "model")
    if not isinstance(m, dict) or m.get("format") != MODEL_FORMAT or m.get("version") != 1:
        raise Refused("model %s: not a %s version 1 file" % (path, MODEL_FORMAT))
    for k, lo, hi in (("vocab", 2, 4096), ("hidden", 1, 256), ("layers", 1, 64), ("seed", 0, 2**64 - 1)):
        v = m.get(k)
        if not is_int(v) or not lo <= v <= hi:
            raise Refused("model %s: %s must be an integer in %d..%d" % (path, k, lo, hi))
    if m.get("generator") != "splitmix64":
        raise Refused("model %s: generator must be splitmix64" % path)
    return m


# ---------------------------------------------------------------- the model


MASK64 = (1 << 64) - 1


class SplitMix64:
    """The splitmix64 generator: integer arithmetic only, identical everywhere."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        """A float in [-1, 1) with 53 random bits (exact)."""
        return (self.next() >> 11) * (2.0 ** -52) - 1.0


class Weights:
    """Embedding E (vocab x hidden), per layer W (hidden x hidden) and b (hidden), unembedding U."""

    def __init__(self, m):
        g = SplitMix64(m["seed"])
        v, h = m["vocab"], m["hidden"]
        self.vocab, self.hidden, self.layers = v, h, m["layers"]
        self.embed = [[g.uniform() for _ in range(h)] for _ in range(v)]
        self.w = []
        self.b = []
        for _ in range(self.layers):
            self.w.append([[g.uniform() * 0.25 for _ in range(h)] for _ in range(h)])
            self.b.append([g.uniform() * 0.125 for _ in range(h)])
        self.unembed = [[g.uniform() for _ in range(h)] for _ in range(v)]


_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def to_f32(x):
    return _F32.unpack(_F32.pack(x))[0]


def to_bf16(x):
    """Round to bfloat16 (nearest, ties to even) through the float32 bit pattern."""
    bits = _U32.unpack(_F32.pack(x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return _F32.unpack(_U32.pack(bits))[0]


def exact(x):
    return x


class Arithmetic:
    """How one path computes: rounding after every operation, weight storage, summation order."""

    def __init__(self, dtype, rnd, store, order):
        self.dtype, self.rnd, self.store, self.order = dtype, rnd, store, order

    def sum(self, terms):
        r = self.rnd
        if self.order == "reversed":
            terms = terms[::-1]
        if self.order == "pairwise":
            return self._pairwise(terms)
        if self.order == "blocked":
            total = 0.0
            for i in range(0, len(terms), 4):
                block = 0.0
                for t in terms[i:i + 4]:
                    block = r(block + t)
                total = r(total + block)
            return total
        total = 0.0
        for t in terms:
            total = r(total + t)
        return total

    def _pairwise(self, terms):
        if len(terms) <= 2:
            total = 0.0
            for t in terms:
                total = self.rnd(total + t)
            return total
        mid = len(terms) // 2
        return self.rnd(self._pairwise(terms[:mid]) + self._pairwise(terms[mid:]))

    def dot(self, a, b):
        r = self.rnd
        return self.sum([r(x * y) for x, y in zip(a, b)])


PATHS = {
    "f64_reference": Arithmetic("float64", exact, exact, "sequential"),
    "f64_reversed": Arithmetic("float64", exact, exact, "reversed"),
    "f64_pairwise": Arithmetic("float64", exact, exact, "pairwise"),
    "f32_sequential": Arithmetic("float32", to_f32, to_f32, "sequential"),
    "f32_blocked": Arithmetic("float32", to_f32, to_f32, "blocked"),
    "f32_reversed": Arithmetic("float32", to_f32, to_f32, "reversed"),
    "bf16_weights": Arithmetic("bfloat16", to_f32, to_bf16, "blocked"),
}


def forward(weights, tokens, ar):
    """Run the model on tokens with arithmetic ar; returns [(boundary name, vector)], logits last.

    x = sum_i ((i+1)/n) * E[t_i]; h = x / rms(x); per layer h += 0.5 * softsign(W h + b);
    logits = U (h / rms(h)). softsign(a) = a / (1 + |a|).
    """
    r, s = ar.rnd, ar.store
    n = len(tokens)
    h_dim = weights.hidden
    pos = [r((i + 1) / n) for i in range(n)]
    x = [ar.sum([r(pos[i] * s(weights.embed[t][k])) for i, t in enumerate(tokens)]) for k in range(h_dim)]
    bounds = []
    h = rms_norm(x, ar)
    bounds.append(("embedding", h))
    for layer in range(weights.layers):
        w, b = weights.w[layer], weights.b[layer]
        nxt = []
        for j in range(h_dim):
            a = r(ar.dot([s(v) for v in w[j]], h) + s(b[j]))
            act = r(a / r(1.0 + abs(a)))
            nxt.append(r(h[j] + r(0.5 * act)))
        h = nxt
        bounds.append(("layer_%d" % layer, h))
    h = rms_norm(h, ar)
    bounds.append(("final_norm", h))
    logits = [ar.dot([s(v) for v in weights.unembed[t]], h) for t in range(weights.vocab)]
    bounds.append(("logits", logits))
    return bounds


def rms_norm(v, ar):
    r = ar.rnd
    ms = r(ar.sum([r(x * x) for x in v]) / len(v))
    d = r(math.sqrt(r(ms + 1e-6)))
    return [r(x / d) for x in v]


# ---------------------------------------------------------------- evidence


def digest(values):
    """sha256 of the values as little-endian IEEE 754 binary64, and the byte count."""
    raw = struct.pack("<%dd" % len(values), *values)
    return "sha256:" + hashlib.sha256(raw).hexdigest(), len(raw)


def token_ids_digest(ids):
    """sha256 of the RFC 8785 canonical form of the integer list (as schemas.Canonical writes it)."""
    return "sha256:" + hashlib.sha256(json.dumps(ids, separators=(",", ":")).encode()).hexdigest()


def ranking(logits):
    """Token ids by non-increasing logit, ties by ascending token id."""
    return sorted(range(len(logits)), key=lambda t: (-logits[t], t))


def top_k(logits, k):
    return ranking(logits)[:k]


def cosine(a, b):
    aa = sum(x * x for x in a)
    bb = sum(y * y for y in b)
    if aa == 0.0 or bb == 0.0:
        return 1.0 if aa == bb else 0.0
    c = sum(x * y for x, y in zip(a, b)) / (math.sqrt(aa) * math.sqrt(bb))
    return max(-1.0, min(1.0, c))


def errors(ref, cand):
    diffs = [abs(x - y) for x, y in zip(ref, cand)]
    return max(diffs), sum(diffs) / len(diffs)


def next_token(weights, request, path_id):
    ar = path_arithmetic(path_id)
    logits = forward(weights, request["input_token_ids"], ar)[-1][1]
    order = ranking(logits)
    top = order[:min(10, len(logits))]
    margin = logits[top[0]] - logits[top[1]] if len(top) > 1 else 0.0
    cands = []
    for c in request.get("candidates", []):
        t = c["token_id"]
        if t >= weights.vocab:
            raise Refused("candidate %s: token id %d is outside the vocabulary (%d)" % (c["label"], t, weights.vocab))
        rank = 1 + sum(1 for v in logits if v > logits[t])
        cands.append({"label": c["label"], "token_id": t, "logit": logits[t], "rank": rank})
    sha, nbytes = digest(logits)
    return {"oracle": {
        "dtype": ar.dtype,
        "vocab": weights.vocab,
        "top_tokens": [{"token_id": t, "logit": logits[t]} for t in top],
        "argmax_token_id": top[0],
        "top_logit_margin": margin,
        "candidate_tokens": cands,
        "logits_sha256": sha,
        "logits_bytes": nbytes,
    }}


def path_attribution(weights, request):
    ids = request.get("paths", [])
    if not ids:
        raise Refused("path attribution: the request names no path to compare")
    tokens = request["input_token_ids"]
    ref = forward(weights, tokens, PATHS[REFERENCE_PATH])[-1][1]
    ref_sha, _ = digest(ref)
    ref_top = set(top_k(ref, 10))
    ref_argmax = ranking(ref)[0]
    out = []
    for pid in ids:
        cand = forward(weights, tokens, path_arithmetic(pid))[-1][1]
        mx, mean = errors(ref, cand)
        argmax = ranking(cand)[0]
        sha, _ = digest(cand)
        out.append({
            "id": pid,
            "argmax": argmax,
            "argmax_equal": argmax == ref_argmax,
            "cosine_similarity": cosine(ref, cand),
            "max_abs_error": mx,
            "mean_abs_error": mean,
            "top10_overlap": len(ref_top & set(top_k(cand, 10))),
            "logits_sha256": sha,
            "reference_logits_sha256": ref_sha,
        })
    return {"reference_path": REFERENCE_PATH, "reference_argmax": ref_argmax, "paths": out}


def layer_attribution(weights, request, candidate):
    if candidate is None:
        if not request.get("paths"):
            raise Refused("layer attribution: no --candidate and the request names no path")
        candidate = request["paths"][0]
    tokens = request["input_token_ids"]
    ref = forward(weights, tokens, PATHS[REFERENCE_PATH])
    cand = forward(weights, tokens, path_arithmetic(candidate))
    bounds = []
    for i, ((name, a), (_, b)) in enumerate(zip(ref, cand)):
        mx, mean = errors(a, b)
        rmse = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)) / len(a))
        ref_rms = math.sqrt(sum(x * x for x in a) / len(a))
        if ref_rms == 0.0:
            raise Refused("layer attribution: boundary %s of the reference is all zeros" % name)
        bounds.append({
            "index": i,
            "name": name,
            "cosine_similarity": cosine(a, b),
            "max_abs_error": mx,
            "mean_abs_error": mean,
            "root_mean_square_error": rmse,
            "reference_root_mean_square": ref_rms,
            "relative_root_mean_square_error": rmse / ref_rms,
            "reference_sha256": digest(a)[0],
            "candidate_sha256": digest(b)[0],
        })
    best = None
    prev = 0.0
    for bd in bounds:
        delta = bd["relative_root_mean_square_error"] - prev
        prev = bd["relative_root_mean_square_error"]
        if best is None or delta > best["relative_root_mean_square_error_delta"]:
            best = {"index": bd["index"], "name": bd["name"], "relative_root_mean_square_error_delta": delta}
    return {"boundaries": bounds, "largest_relative_error_growth": best}


def path_arithmetic(pid):
    if pid not in PATHS:
        raise Refused("unknown path %r; this worker computes %s" % (pid, ", ".join(sorted(PATHS))))
    return PATHS[pid]


# ---------------------------------------------------------------- isolation probe


def probe_connect(port):
    """Reaching the host's loopback port or an outside address is an isolation failure."""
    for host, p in (("127.0.0.1", port), ("192.0.2.1", 80)):
        try:
            conn = socket.create_connection((host, p), timeout=2)
        except OSError as e:
            sys.stderr.write("probe: %s:%d unreachable (%s)\n" % (host, p, e.__class__.__name__))
            continue
        conn.close()
        raise Refused("probe: connected to %s:%d: the network is not isolated" % (host, p), 4)


# ---------------------------------------------------------------- main


def parse_args(argv):
    opts = {"mode": None, "path": REFERENCE_PATH, "candidate": None, "probe": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a not in ("--mode", "--path", "--candidate", "--probe-connect") or i + 1 >= len(argv):
            raise Refused("usage: worker.py --mode next-token|path-attribution|layer-attribution [--path ID] [--candidate ID] [--probe-connect PORT]; got %r" % a)
        v = argv[i + 1]
        if a == "--mode":
            opts["mode"] = v
        elif a == "--path":
            opts["path"] = v
        elif a == "--candidate":
            opts["candidate"] = v
        else:
            if not v.isdigit() or not 1 <= int(v) <= 65535:
                raise Refused("--probe-connect %r: want a port 1..65535" % v)
            opts["probe"] = int(v)
        i += 2
    if opts["mode"] not in CONTRACTS:
        raise Refused("--mode must be one of %s" % ", ".join(CONTRACTS))
    return opts


def write_output(path, doc):
    if not path:
        raise Refused("QUALKIT_DRIVER_OUTPUT is not set")
    data = (json.dumps(doc, sort_keys=True, allow_nan=False, indent=1) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def main(argv):
    env = os.environ
    check_gate(env.get("QUALKIT_START_GATE", ""))
    opts = parse_args(argv)
    contract = CONTRACTS[opts["mode"]]
    if env.get("QUALKIT_DRIVER_CONTRACT") != contract:
        raise Refused("--mode %s writes %s, but the runner asks for %r" % (opts["mode"], contract, env.get("QUALKIT_DRIVER_CONTRACT")))
    if opts["probe"] is not None:
        probe_connect(opts["probe"])
    request = load_request(env.get("QUALKIT_DRIVER_REQUEST", ""))
    weights = Weights(load_model(env.get("QUALKIT_DRIVER_MODEL", "")))
    for t in request["input_token_ids"]:
        if t >= weights.vocab:
            raise Refused("input token id %d is outside the vocabulary (%d)" % (t, weights.vocab))
    if opts["mode"] == "next-token":
        body = next_token(weights, request, opts["path"])
    elif opts["mode"] == "path-attribution":
        body = path_attribution(weights, request)
    else:
        body = layer_attribution(weights, request, opts["candidate"])
    write_output(env.get("QUALKIT_DRIVER_OUTPUT", ""), {
        "schema": WORKER_OUTPUT,
        "contract": contract,
        "request_id": request["id"],
        "input_token_ids_sha256": token_ids_digest(request["input_token_ids"]),
        "body": body,
    })
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refused as e:
        sys.stderr.write("worker: %s\n" % e)
        sys.exit(e.code)
