"""Generates Kiln (Python json.dumps) vectors for schemas' canonical tests.

py_floats.txt: "<IEEE 754 bits in hex> <repr(x)>" lines.
kiln_dumps.jsonl: {"input": text, "ascii": dumps(ensure_ascii=True), "utf8": dumps(ensure_ascii=False)}
with sort_keys=True, separators=(",", ":"), allow_nan=False, as Kiln's canonical_sha256.
"""
import json, random, struct, sys

random.seed(20260719)
with open("py_floats.txt", "w") as f:
    f.write("# repr(float) by CPython %s\n# format: <IEEE 754 bits in hex> <repr(x)>\n" % sys.version.split()[0])
    vals = []
    for _ in range(1500):
        x = struct.unpack(">d", random.getrandbits(64).to_bytes(8, "big"))[0]
        if x == x and abs(x) != float("inf"):
            vals.append(x)
    for e in range(-330, 311):
        for m in ("1", "9.999999999999999", "1.2345678901234567"):
            x = float(m + "e" + str(e))
            if x != 0 and abs(x) != float("inf"):
                vals.append(x)
    vals += [0.0, -0.0, 300.0, 1e16, 1e15, 1e-4, 1e-5, 0.1, 0.5, 123456789012345.6, 2.0**53, 1e22]
    for x in vals:
        f.write("%s %r\n" % (struct.pack(">d", x).hex(), x))

docs = [
    '{"b":1,"a":[300.0,-0.0,1e-05,1e+16,12345678901234567890,0.9532051839632913],"c":null,"d":true,"e":false}',
    '{"text":"caf\\u00e9 \\ud83d\\ude00 \\u2028 \\u007f \\u0000\\u001f\\b\\f\\n\\r\\t \\"q\\" \\\\ /"}',
    '{"\\ue000":1,"\\ud83d\\ude00":2,"\\u00f6":3,"z":4,"Z":5,"":6,"a b":7}',
    '{"nested":{"y":[{"k":"v","j":[]},{}],"x":{"deep":{"deeper":"\\u4e2d\\u6587"}}}}',
    '[1,2,3,"\\u0080\\u00ff\\u0100\\uffff"]',
    '"just a string \\u001b"',
]
with open("kiln_dumps.jsonl", "w") as f:
    for d in docs:
        v = json.loads(d)
        f.write(json.dumps({
            "input": d,
            "ascii": json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False),
            "utf8": json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False),
        }) + "\n")
