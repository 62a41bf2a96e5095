// check.mjs cross-checks qualkit's exported JSON Schemas with ajv, the third validator
// (after CUE and santhosh-tekuri/jsonschema in Go) that must agree on the conformance corpus.
//
// Usage: node .ci/ajv/check.mjs <repo-root>
//
// It compiles every schemas/json/*.schema.json with Ajv2020 in strict mode plus ajv-formats
// (so "format": "date-time" is asserted, as the Go validator does), then validates every
// schemas/testdata/<name>/{valid,invalid}/*.json against <name>.schema.json. A document in
// valid/ must pass and one in invalid/ must fail. It prints one line per disagreement and a
// summary, and exits 1 on any disagreement, on a schema that does not compile, or on a corpus
// directory (one holding valid/ or invalid/) that has no schema.
import { readFileSync, readdirSync, existsSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

function main(argv) {
  if (argv.length !== 1) {
    console.error("usage: node .ci/ajv/check.mjs <repo-root>");
    return 2;
  }
  const root = argv[0];
  const schemaDir = join(root, "schemas", "json");
  const corpusDir = join(root, "schemas", "testdata");
  let failed = false;

  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);

  const validators = new Map();
  for (const file of readdirSync(schemaDir).filter((f) => f.endsWith(".schema.json")).sort()) {
    const name = file.slice(0, -".schema.json".length);
    const path = join(schemaDir, file);
    try {
      validators.set(name, ajv.compile(JSON.parse(readFileSync(path, "utf8"))));
    } catch (err) {
      console.log(`${relative(root, path)}: schema does not compile: ${err.message}`);
      failed = true;
    }
  }
  if (validators.size === 0 && !failed) {
    console.log(`${relative(root, schemaDir) || schemaDir}: no *.schema.json files`);
    return 1;
  }

  let documents = 0;
  let agree = 0;
  const names = existsSync(corpusDir)
    ? readdirSync(corpusDir).filter((d) => statSync(join(corpusDir, d)).isDirectory()).sort()
    : [];
  for (const name of names) {
    // Other tests keep fixtures under schemas/testdata too; a corpus directory is one with valid/ or invalid/.
    if (!["valid", "invalid"].some((v) => existsSync(join(corpusDir, name, v)))) continue;
    const validate = validators.get(name);
    if (!validate) {
      console.log(`${relative(root, join(corpusDir, name))}: no schema ${name}.schema.json`);
      failed = true;
      continue;
    }
    for (const verdict of ["valid", "invalid"]) {
      const dir = join(corpusDir, name, verdict);
      if (!existsSync(dir)) continue;
      for (const file of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
        const path = join(dir, file);
        const rel = relative(root, path);
        documents++;
        let doc;
        try {
          doc = JSON.parse(readFileSync(path, "utf8"));
        } catch (err) {
          console.log(`${rel}: not JSON: ${err.message}`);
          continue;
        }
        const ok = validate(doc);
        if (ok === (verdict === "valid")) {
          agree++;
          continue;
        }
        const says = ok
          ? "valid"
          : validate.errors.map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
        console.log(`${rel}: want ${verdict}, ajv says: ${says}`);
      }
    }
  }
  console.log(`ajv: ${documents} documents, ${agree} agree`);
  return failed || agree !== documents ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
