package rowcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestJudgeCall: a call is judged again from the arguments its record keeps, by the runner's
// rule; each edit an adversary could make to a recorded call is found, and a call whose
// arguments could not be kept rests on the record.
func TestJudgeCall(t *testing.T) {
	fns, err := wire.ParseFunctions([]byte(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string, valid bool) contract.ToolCall {
		sum := sha256.Sum256([]byte(args))
		a := args
		return contract.ToolCall{Name: name, ArgumentsDigest: "sha256:" + hex.EncodeToString(sum[:]), ArgumentsBytes: int64(len(args)), Arguments: &a, Valid: valid}
	}
	for _, tc := range []struct {
		name       string
		call       contract.ToolCall
		rowKeeps   bool
		want       string // "" no finding
		restsOnRec bool
	}{
		{"valid", call("get_weather", `{"city":"Oslo"}`, true), true, "", false},
		{"invalid", call("get_weather", `{"days":1}`, false), true, "", false},
		{"invalid recorded valid", call("get_weather", `{"days":1}`, true), true, "records valid true; judged again: arguments of get_weather do not satisfy its parameters", false},
		{"valid recorded invalid", call("get_weather", `{"city":"Oslo"}`, false), true, "records valid false; judged again: its arguments satisfy", false},
		{"not offered", call("get_time", `{}`, true), true, `calls "get_time", which the case's tools do not offer`, false},
		{"digest", func() contract.ToolCall {
			c := call("get_weather", `{"city":"Oslo"}`, true)
			*c.Arguments = `{"city":"Rome"}`
			return c
		}(), true, "keeps 15 bytes of arguments with digest", false},
		{"size", func() contract.ToolCall {
			c := call("get_weather", `{"city":"Oslo"}`, true)
			c.ArgumentsBytes = 3
			return c
		}(), true, "it records 3 bytes", false},
		{"arguments dropped", func() contract.ToolCall { c := call("get_weather", `{"days":1}`, true); c.Arguments = nil; return c }(), true, "keeps no arguments in a row that keeps them", false},
		{"long, not kept", func() contract.ToolCall {
			c := call("get_weather", `{"city":"`+strings.Repeat("x", wire.MaxKeptArgumentBytes)+`"}`, true)
			c.Arguments = nil
			return c
		}(), true, "", true},
		{"legacy row", func() contract.ToolCall { c := call("get_weather", `{"days":1}`, true); c.Arguments = nil; return c }(), false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: "tolerances"}
			r := &record.Record{Index: 3, Calls: []contract.ToolCall{tc.call}}
			judged := judgeCall(c, contract.Row{Records: contract.FileRef{Path: "rows.jsonl"}}, r, 0, fns, true, tc.rowKeeps)
			res := c.Result()
			if judged == tc.restsOnRec {
				t.Errorf("judged %v, want rests on the record %v", judged, tc.restsOnRec)
			}
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Error(), tc.want) {
				t.Fatalf("findings %v, want one mentioning %q", res.Findings, tc.want)
			}
		})
	}
	// With the functions not known (the tools file unavailable), a call that keeps its arguments
	// is not counted among those that keep none (the note named 24 such calls that all kept
	// theirs), and its digest is still checked.
	c := &finding.Collector{Check: "tolerances"}
	kept := call("get_weather", `{"days":1}`, true)
	if !judgeCall(c, contract.Row{Records: contract.FileRef{Path: "rows.jsonl"}}, &record.Record{Calls: []contract.ToolCall{kept}}, 0, nil, false, true) {
		t.Error("functions unknown: a call that keeps its arguments was counted as keeping none")
	}
	*kept.Arguments = `{"days":2}`
	judgeCall(c, contract.Row{Records: contract.FileRef{Path: "rows.jsonl"}}, &record.Record{Calls: []contract.ToolCall{kept}}, 0, nil, false, true)
	if res := c.Result(); len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Error(), "with digest") {
		t.Errorf("functions unknown, arguments edited: findings %v", res.Findings)
	}
}
