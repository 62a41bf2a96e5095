package verify

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/attestfmt"
)

// The tampering matrix: real campaign evidence (the frozen a-1 run), sealed again with a key made
// for the test, then changed one way each. Every change is rejected, by the right check and for
// the right reason. "resealed" cases model evidence a campaign really produced (or an attacker
// who holds the key): digests and signature are made consistent after the change, so only the
// check that owns the condition can catch it.
func TestTamperingMatrix(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	kiln, err := os.ReadFile("../schemas/testdata/kiln/oracle-result-v1-rocm-hf-next-token-guarded-fingerprint.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tamper func(t *testing.T, root, run string, k testKey) Policy
		check  Check
		reason *Reason
		// also, when set, must appear in the finding's message.
		also string
	}{
		{"payload edited", func(t *testing.T, root, run string, k testKey) Policy {
			editEnvelope(t, root, receipt, func(env map[string]any) {
				st := decodePayload(t, env["payload"].(string))
				st["predicate"].(map[string]any)["host_id"] = "another-host"
				env["payload"] = encodePayload(t, st)
			})
			return k.policy()
		}, CheckSignature, ErrBadSignature, ""},
		{"signature edited", func(t *testing.T, root, run string, k testKey) Policy {
			editEnvelope(t, root, receipt, func(env map[string]any) {
				sig := env["signatures"].([]any)[0].(map[string]any)
				raw, _ := base64.StdEncoding.DecodeString(sig["sig"].(string))
				raw[len(raw)/2] ^= 0x40
				sig["sig"] = base64.StdEncoding.EncodeToString(raw)
			})
			return k.policy()
		}, CheckSignature, ErrBadSignature, ""},
		{"wrong key", func(t *testing.T, root, run string, k testKey) Policy {
			return newTestKey(t).policy()
		}, CheckSignature, ErrBadSignature, ""},
		{"subject digest mismatch", func(t *testing.T, root, run string, k testKey) Policy {
			st := statementFor(t, root, receipt)
			sub := st["subject"].([]any)[1].(map[string]any)
			sub["digest"] = map[string]any{"sha256": strings.Repeat("ab", 32)}
			sign(t, root, receipt, k, st) // validly signed, but it binds other bytes
			return k.policy()
		}, CheckHashes, ErrSubjectMismatch, ""},
		{"evidence file swapped", func(t *testing.T, root, run string, k testKey) Policy {
			rows := filepath.Join(root, run, "cases/000-chat-stream-r000/rows")
			other, _ := os.ReadFile(filepath.Join(rows, "c0002-r000.jsonl"))
			mustWrite(t, filepath.Join(rows, "c0001-r000.jsonl"), other)
			return k.policy()
		}, CheckHashes, ErrDigestMismatch, "c0001-r000.jsonl"},
		{"artifact swapped", func(t *testing.T, root, run string, k testKey) Policy {
			other, _ := os.ReadFile(filepath.Join(root, "workloads/launch/frozen-b.json"))
			mustWrite(t, filepath.Join(root, "workloads/launch/frozen-a.json"), other)
			return k.policy()
		}, CheckHashes, ErrDigestMismatch, "workloads/launch/frozen-a.json"},
		{"receipt from another commit", func(t *testing.T, root, run string, k testKey) Policy {
			// The evidence sits in a checkout whose origin/main moved on: publishing it would
			// publish a result of another commit.
			fakeCheckout(t, root, strings.Repeat("1", 40))
			return k.policy()
		}, CheckSource, ErrNotOriginMain, ""},
		{"case result removed", func(t *testing.T, root, run string, k testKey) Policy {
			if err := os.Remove(filepath.Join(root, run, "cases/001-tool-present-r000/case-result.json")); err != nil {
				t.Fatal(err)
			}
			return k.policy()
		}, CheckHashes, ErrMissingFile, "case-result.json"},
		{"forced shutdown (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			editLifecycle(t, root, run, func(l map[string]any) {
				l["shutdown"].(map[string]any)["forced"] = true
			}, "forced cleanup: the server ignored SIGTERM")
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckCleanup, ErrForcedShutdown, ""},
		{"residue present (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			editLifecycle(t, root, run, func(l map[string]any) {
				r := l["residue"].(map[string]any)
				r["processes"] = []any{map[string]any{"pid": json.Number("4242"), "comm": "qualsim", "escaped": true}}
				r["killed"] = true
			}, "residue: process 4242 (qualsim) escaped the group")
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckCleanup, ErrResidue, "4242"},
		{"schema-invalid receipt (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			rc := readTree(t, filepath.Join(root, receipt))
			rc["thermal_headroom"] = json.Number("3")
			writeTree(t, filepath.Join(root, receipt), rc)
			sign(t, root, receipt, k, statementFor(t, root, receipt))
			return k.policy()
		}, CheckSchemas, ErrSchemaViolation, ""},
		{"v1 temperature result (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			mustWrite(t, filepath.Join(root, run, "cases/001-tool-present-r000/case-result.json"), kiln)
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckSchemas, ErrHistoricalEvidence, "kiln.rocm-hf-next-token-oracle.v1"},
		{"versioned run config breaking its contract (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			p := filepath.Join(root, run, "effective-run-config.json")
			cfg := readTree(t, p)
			cfg["schema"] = "qualkit.effective-run-config.v1" // claims the contract, keeps the old shape
			writeTree(t, p, cfg)
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckSchemas, ErrSchemaViolation, "effective-run-config.json"},
		{"extra file in the run directory", func(t *testing.T, root, run string, k testKey) Policy {
			mustWrite(t, filepath.Join(root, run, "extra.json"), []byte("{}\n"))
			return k.policy()
		}, CheckHashes, ErrUnboundFile, "extra.json"},
		{"extra rows file (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			rows := filepath.Join(root, run, "cases/000-chat-stream-r000/rows")
			other, _ := os.ReadFile(filepath.Join(rows, "c0002-r000.jsonl"))
			mustWrite(t, filepath.Join(rows, "c0004-r000.jsonl"), other)
			reseal(t, root, receipt, k) // the campaign's signer seals what it lists, and it lists no c0004
			return k.policy()
		}, CheckHashes, ErrUnboundFile, "rows/c0004-r000.jsonl"},
		{"relabelled required case (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			// A campaign whose required command case failed, honestly recorded, then relabelled:
			// the case not required, the campaign passed and publishable.
			failCommandCase(t, root, run)
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				rc["results"].([]any)[1].(map[string]any)["required"] = false
				rc["qualification"].(map[string]any)["verdict"] = "passed"
				rc["publishable"] = true
				rc["unpublishable_reasons"] = []any{}
			})
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckTolerances, ErrVerdictMismatch, "result \"tool-present\" is recorded required: false, the workload's case tool-present says required: true"},
		{"receipt_id changed (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				rc["receipt_id"] = "20261130t144931051989z-cpu-frozen-host-qualsim-frozen-0000000000-v1"
			})
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckHashes, ErrIdentityMismatch, "/receipt_id"},
		{"host_id changed (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				rc["environment"].(map[string]any)["host_id"] = "another-host"
			})
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckHashes, ErrIdentityMismatch, `host id "another-host"`},
		{"launch recipe path differs from the workload's (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			// The same bytes at another path: not the recipe the workload's case launches.
			b, _ := os.ReadFile(filepath.Join(root, "workloads/launch/frozen-a.json"))
			mustWrite(t, filepath.Join(root, "workloads/launch/other.json"), b)
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				for _, a := range rc["artifacts"].([]any) {
					if m := a.(map[string]any); m["kind"] == "launch_recipe" {
						m["path"] = "workloads/launch/other.json"
					}
				}
			})
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckComparability, ErrWorkloadMismatch, "launch recipe workloads/launch/other.json is bound, but no serving case of variant cpu-a launches it"},
		// Beyond the required matrix.
		{"failed campaign, honestly recorded (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			failCommandCase(t, root, run)
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckTolerances, ErrVerdictFailed, "the campaign's verdict is failed"},
		{"row metric edited (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			p := filepath.Join(root, run, "cases/000-chat-stream-r000/case-result.json")
			cr := readTree(t, p)
			m := cr["rows"].([]any)[0].(map[string]any)["metrics"].([]any)[0].(map[string]any)
			m["value"] = json.Number("1.5")
			writeTree(t, p, cr)
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckTolerances, ErrMetricMismatch, "ttft_ms.p50"},
		{"decode rate labelled as window throughput (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			p := filepath.Join(root, run, "cases/000-chat-stream-r000/case-result.json")
			cr := readTree(t, p)
			for _, x := range cr["rows"].([]any)[0].(map[string]any)["metrics"].([]any) {
				if m := x.(map[string]any); m["name"] == "output_throughput_window" {
					m["formula"] = "decode_rate.v1"
				}
			}
			writeTree(t, p, cr)
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckComparability, ErrFormulaMismatch, "a request-window throughput is never compared with a decode rate"},
		{"request failed in a passed result (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			p := filepath.Join(root, run, "cases/000-chat-stream-r000/rows/c0002-r000.jsonl")
			b, _ := os.ReadFile(p)
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			lines[2] = strings.Replace(lines[2], `"passed":true`, `"passed":false`, 1)
			mustWrite(t, p, []byte(strings.Join(lines, "\n")+"\n"))
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckTolerances, ErrRequestFailed, ""},
		{"success with more completion tokens than max_tokens (resealed)", func(t *testing.T, root, run string, k testKey) Policy {
			p := filepath.Join(root, run, "cases/000-chat-stream-r000/rows/c0002-r000.jsonl")
			b, _ := os.ReadFile(p)
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			old := `"usage":{"prompt_tokens":13,"completion_tokens":4,"total_tokens":17}`
			if !strings.Contains(lines[2], old) {
				t.Fatalf("record 2 has another usage: %s", lines[2])
			}
			lines[2] = strings.Replace(lines[2], old, `"usage":{"prompt_tokens":13,"completion_tokens":4000000,"total_tokens":4000013}`, 1)
			mustWrite(t, p, []byte(strings.Join(lines, "\n")+"\n"))
			reseal(t, root, receipt, k)
			return k.policy()
		}, CheckTolerances, ErrRequestFailed, "4000000 completion tokens for max_tokens 4 (usage_exceeds_max_tokens)"},
		{"unsigned", func(t *testing.T, root, run string, k testKey) Policy {
			base := filepath.Join(root, strings.TrimSuffix(receipt, ".json"))
			os.Remove(base + attestfmt.EnvelopeSuffix)
			os.Remove(base + attestfmt.BundleSuffix)
			return k.policy()
		}, CheckSignature, ErrUnsigned, ""},
		{"bundle and envelope differ", func(t *testing.T, root, run string, k testKey) Policy {
			st := statementFor(t, root, receipt)
			payload, _ := json.MarshalIndent(st, "", " ") // same statement, other bytes
			_, bundle := sealPayload(t, payload, k)
			mustWrite(t, filepath.Join(root, strings.TrimSuffix(receipt, ".json")+attestfmt.BundleSuffix), bundle)
			return k.policy()
		}, CheckSignature, ErrAttestationsDiffer, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			k := newTestKey(t)
			reseal(t, root, receipt, k)
			if res := verifyAt(t, root, receipt, k.policy()); res.Verdict != Verified {
				t.Fatalf("resealed evidence does not verify before tampering:%s", findingsOf(res))
			}
			p := tc.tamper(t, root, runDirOf(t, root, receipt), k)
			res := verifyAt(t, root, receipt, p)
			if res.Verdict != Rejected {
				t.Fatalf("tampered evidence verified")
			}
			found := false
			for _, f := range res.Check(tc.check).Findings {
				if errors.Is(f, tc.reason) && errors.Is(f.Err, tc.reason) && strings.Contains(f.Error(), tc.also) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s finding of check %s%s; findings:%s", tc.reason.Code(), tc.check, ifSet(" mentioning "+tc.also, tc.also), findingsOf(res))
			}
			var failed []string
			for _, c := range res.Checks {
				if c.Status == StatusFailed {
					failed = append(failed, string(c.Check))
				}
			}
			t.Logf("rejected by %s (%s); failed checks: %s", tc.check, tc.reason.Code(), strings.Join(failed, ", "))
		})
	}
}

func ifSet(s, cond string) string {
	if cond == "" {
		return ""
	}
	return s
}

func mustWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func editEnvelope(t *testing.T, root, receipt string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(root, strings.TrimSuffix(receipt, ".json")+attestfmt.EnvelopeSuffix)
	env := readTree(t, p)
	edit(env)
	writeTree(t, p, env)
	os.Remove(filepath.Join(root, strings.TrimSuffix(receipt, ".json")+attestfmt.BundleSuffix)) // judge the envelope alone
}

func decodePayload(t *testing.T, s string) map[string]any {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encodePayload(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// editLifecycle changes the lifecycle record as a campaign with that outcome writes it: a failed
// lifecycle, a failed receipt that is not publishable.
func editLifecycle(t *testing.T, root, run string, edit func(map[string]any), failure string) {
	t.Helper()
	p := filepath.Join(root, run, "lifecycle.json")
	l := readTree(t, p)
	edit(l)
	l["verdict"] = "failed"
	l["failures"] = []any{failure}
	writeTree(t, p, l)
	rp := filepath.Join(root, ".qualification/receipts/a-1.json")
	rc := readTree(t, rp)
	rc["lifecycle"].(map[string]any)["verdict"] = "failed"
	rc["qualification"].(map[string]any)["verdict"] = "failed"
	rc["publishable"] = false
	rc["unpublishable_reasons"] = []any{"the verdict is failed"}
	rc["notes"] = []any{"lifecycle: " + failure}
	writeTree(t, rp, rc)
}

// fakeCheckout makes root a git checkout (metadata only) whose HEAD and origin/main are commit.
func fakeCheckout(t *testing.T, root, commit string) {
	t.Helper()
	for p, content := range map[string]string{
		".git/HEAD":                     "ref: refs/heads/main\n",
		".git/refs/heads/main":          commit + "\n",
		".git/refs/remotes/origin/main": commit + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(root, p), []byte(content))
	}
}

// TestHintsIgnored: the DSSE keyid and the bundle's public key hint are unauthenticated hints:
// a wrong keyid or hint changes nothing, and a bundle's transparency log entries (not verified
// offline) are reported as a warning.
func TestHintsIgnored(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	root := copyTree(t, frozenRoot)
	k := newTestKey(t)
	reseal(t, root, receipt, k)
	base := filepath.Join(root, strings.TrimSuffix(receipt, ".json"))
	env := readTree(t, base+attestfmt.EnvelopeSuffix)
	env["signatures"].([]any)[0].(map[string]any)["keyid"] = "SHA256:not-the-key-that-signed"
	writeTree(t, base+attestfmt.EnvelopeSuffix, env)
	b := readTree(t, base+attestfmt.BundleSuffix)
	vm := b["verificationMaterial"].(map[string]any)
	vm["publicKey"].(map[string]any)["hint"] = base64.StdEncoding.EncodeToString([]byte("another key"))
	vm["tlogEntries"] = []any{map[string]any{"logIndex": "1"}}
	writeTree(t, base+attestfmt.BundleSuffix, b)
	res := verifyAt(t, root, receipt, k.policy())
	if res.Verdict != Verified {
		t.Fatalf("rejected:%s", findingsOf(res))
	}
	found := false
	for _, w := range res.Warnings {
		found = found || strings.Contains(w, "1 transparency log entries are not verified")
	}
	if !found {
		t.Errorf("no warning about the tlog entry: %q", res.Warnings)
	}
}

// TestMissingInputFailsClosed: deleting the bound workload (which decides the required cases,
// SLOs, row grid, corpus and comparison rules) is a rejection; only the explicit unsafe option
// verifies without it, and the result then says what was not checked.
func TestMissingInputFailsClosed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	for _, input := range []string{"workloads/frozen.json", "workloads/launch/frozen-a.json"} {
		t.Run(input, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			k := newTestKey(t)
			reseal(t, root, receipt, k)
			if err := os.Remove(filepath.Join(root, input)); err != nil {
				t.Fatal(err)
			}
			res := verifyAt(t, root, receipt, k.policy())
			if res.Verdict != Rejected {
				t.Fatalf("verified without %s", input)
			}
			found := false
			for _, f := range res.Check(CheckHashes).Findings {
				found = found || (errors.Is(f, ErrMissingInput) && strings.Contains(f.Error(), input))
			}
			if !found {
				t.Fatalf("no missing_input finding naming %s:%s", input, findingsOf(res))
			}

			res = verifyAt(t, root, receipt, k.policy(), AllowMissingInputsUnsafe())
			if res.Verdict != Verified {
				t.Fatalf("rejected with %s:%s", RelaxMissingInputs, findingsOf(res))
			}
			if !slices.Contains(res.Weakened, string(RelaxMissingInputs)) {
				t.Errorf("weakened %v does not name %s", res.Weakened, RelaxMissingInputs)
			}
			said := false
			for _, w := range res.Warnings {
				said = said || (strings.Contains(w, input) && strings.Contains(w, "not"))
			}
			if !said {
				t.Errorf("no warning says what was not checked without %s: %q", input, res.Warnings)
			}
		})
	}
}

// failCommandCase records the frozen a-1 campaign as if its required command case tool-present
// had exited 1: the case result, the receipt's result and counts, a failed verdict, not
// publishable; consistent, as qualrun writes a failed campaign.
func failCommandCase(t *testing.T, root, run string) {
	t.Helper()
	p := filepath.Join(root, run, "cases/001-tool-present-r000/case-result.json")
	var metrics []any
	editJSON(t, p, func(cr map[string]any) {
		cr["status"] = "failed"
		cr["details"] = "exit code 1, expected one of [0]"
		for _, x := range cr["metrics"].([]any) {
			m := x.(map[string]any)
			switch m["name"] {
			case "case_pass":
				m["value"] = json.Number("0")
			case "exit_code":
				m["value"] = json.Number("1")
			}
		}
		metrics = cr["metrics"].([]any)
	})
	editJSON(t, filepath.Join(root, ".qualification/receipts/a-1.json"), func(rc map[string]any) {
		r := rc["results"].([]any)[1].(map[string]any)
		if r["id"] != "tool-present" {
			t.Fatalf("result 1 is %v", r["id"])
		}
		r["status"], r["metrics"], r["details"] = "failed", metrics, "exit code 1, expected one of [0]"
		for _, x := range rc["metrics"].([]any) {
			m := x.(map[string]any)
			switch m["name"] {
			case "results_passed":
				m["value"] = json.Number("1")
			case "results_failed":
				m["value"] = json.Number("1")
			}
		}
		rc["qualification"].(map[string]any)["verdict"] = "failed"
		rc["publishable"] = false
		rc["unpublishable_reasons"] = []any{"the verdict is failed"}
	})
}

// TestDegradedRowNotPublishable: the frozen a-2's closed-loop row c2-r0 is degraded (real
// evidence: its client's own lag). Resealed with a test key it verifies (a closed-loop row's lag
// is diagnostic for publication). Relabelled as an open-loop row (a rate claim the row did not
// run) and resealed, it is not publishable (degraded_row, naming the row), and declaring
// measures_saturation: true in its workload case does not make it publishable (the runner writes
// such a receipt not publishable as a rate claim; the verifier says the same). The finding is the
// tolerances check's, which recomputes the row's fidelity (it was filed under source before).
func TestDegradedRowNotPublishable(t *testing.T) {
	const receipt = ".qualification/receipts/a-2.json"
	root := copyTree(t, frozenRoot)
	k := newTestKey(t)
	reseal(t, root, receipt, k)
	if res := verifyAt(t, root, receipt, k.policy()); res.Verdict != Verified {
		t.Fatalf("a degraded closed-loop row refused publication:%s", findingsOf(res))
	}
	cr := filepath.Join(root, ".qualification/runs/20261130t144932848347z-cpu-frozen-host-qualsim-frozen-509242b324-v1/cases/000-chat-stream-r000/case-result.json")
	editJSON(t, cr, func(m map[string]any) {
		row := m["rows"].([]any)[1].(map[string]any)
		row["loop"] = "open"
		row["fidelity"].(map[string]any)["offered_rate"] = json.Number("1000")
	})
	reseal(t, root, receipt, k)
	res := verifyAt(t, root, receipt, k.policy())
	if res.Verdict != Rejected || !hasFinding(res, CheckTolerances, ErrDegradedRow, "row c2-r0 of result chat-stream (repetition 0) is degraded") {
		t.Fatalf("want a degraded_row finding for the open-loop row c2-r0:%s", findingsOf(res))
	}
	editJSON(t, filepath.Join(root, "workloads/frozen.json"), func(w map[string]any) {
		for _, v := range w["variants"].([]any) {
			for _, c := range v.(map[string]any)["cases"].([]any) {
				if cm := c.(map[string]any); cm["id"] == "chat-stream" {
					cm["measures_saturation"] = true
				}
			}
		}
	})
	for _, r := range frozenReceipts {
		reseal(t, root, r, k)
	}
	if res := verifyAt(t, root, receipt, k.policy()); !hasFinding(res, CheckTolerances, ErrDegradedRow, "lets the case pass but never makes the row a measurement of its offered rate") {
		t.Fatalf("a case that measures saturation: want degraded_row saying saturation does not publish the row:%s", findingsOf(res))
	}
}
