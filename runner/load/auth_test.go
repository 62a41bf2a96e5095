package load

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunTokenEnvQualsim: against a real qualsim that requires an API key, Run with Plan.TokenEnv sends
// the token on every request and scrape (every request passes, both scrapes answer), and no record
// carries it; the same plan without TokenEnv, or with another token, gets 401 on every request,
// which proves the header is what let the first run through.
func TestRunTokenEnvQualsim(t *testing.T) {
	const token = "qk-load-Tok3n-h8Vq2"
	t.Setenv("QK_LOAD_TEST_KEY", token)
	t.Setenv("QK_LOAD_TEST_OTHER", "qk-load-other-Zx91")
	q := startQualsim(t, false, "--ttft", "1ms", "--token-interval", "200us", "--api-key-env", "QK_LOAD_TEST_KEY")
	plan := Plan{CaseID: "chat-stream", Case: servingCase([]int64{1, 2}, 1, 1, 8), BaseURL: q.url, ModelID: "qualsim-tiny",
		Prompts: inlinePrompts()[:3], Seed: 7, Epoch: time.Now(), ScrapeMetrics: true, TokenEnv: "QK_LOAD_TEST_KEY"}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range res.Rows {
		if rr.Row.Successes != rr.Row.Requests || rr.Row.Requests != 3 {
			t.Fatalf("c=%d: %d of %d ok", rr.Row.Concurrency, rr.Row.Successes, rr.Row.Requests)
		}
		if rr.Telemetry == nil || len(rr.Telemetry.Warnings) != 0 || len(rr.Telemetry.Series) == 0 {
			t.Fatalf("telemetry %+v", rr.Telemetry)
		}
		b, _ := json.Marshal(rr)
		if strings.Contains(string(b), token) {
			t.Fatalf("the token is in a row or its records: %s", b)
		}
	}

	for _, env := range []string{"", "QK_LOAD_TEST_OTHER"} {
		plan.TokenEnv, plan.Epoch = env, time.Now()
		res, err := Run(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range res.Rows {
			if rr.Row.Failures != rr.Row.Requests {
				t.Fatalf("TokenEnv %q: %d of %d failed, want all", env, rr.Row.Failures, rr.Row.Requests)
			}
			for _, r := range rr.Records {
				if r.Error == nil || string(r.Error.Class) != string(ClassHTTPStatus) || !strings.Contains(r.Error.Message, "401") {
					t.Fatalf("TokenEnv %q: record %d error %+v", env, r.Index, r.Error)
				}
			}
			if rr.Telemetry == nil || len(rr.Telemetry.Warnings) != 0 {
				t.Fatalf("TokenEnv %q: /metrics is open, telemetry %+v", env, rr.Telemetry)
			}
		}
	}
}

// TestRunTokenEnvRefused: a TokenEnv that is unset, empty or not a header value stops Run before
// any request, naming the variable and never quoting its value.
func TestRunTokenEnvRefused(t *testing.T) {
	t.Setenv("QK_LOAD_EMPTY", "")
	t.Setenv("QK_LOAD_SPACED", "has a space")
	for _, tc := range []struct{ env, want string }{
		{"QK_LOAD_NEVER_SET", "token environment variable QK_LOAD_NEVER_SET is not set"},
		{"QK_LOAD_EMPTY", "token environment variable QK_LOAD_EMPTY is empty"},
		{"QK_LOAD_SPACED", "bearer token (11 bytes): byte 3 is not visible ASCII"},
	} {
		plan := Plan{CaseID: "c", Case: servingCase([]int64{1}, 1, 0, 4), BaseURL: "http://127.0.0.1:1", ModelID: "m",
			Prompts: inlinePrompts()[:1], Epoch: time.Now(), TokenEnv: tc.env}
		res, err := Run(context.Background(), plan)
		if res != nil || !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Run = %v, %v; want ErrPlan with %q", tc.env, res, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "has a space") {
			t.Errorf("%s: the error quotes the value: %v", tc.env, err)
		}
	}
}
