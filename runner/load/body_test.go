package load

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

func TestBody(t *testing.T) {
	topP := 0.9
	seed := int64(100)
	tests := []struct {
		name string
		c    contract.Case
		p    Prompt
		seed *int64
		want string
	}{
		{"chat minimal", contract.Case{API: "chat", Stream: true, MaxTokens: 8, Sampling: &contract.Sampling{}}, Prompt{ID: "a", Text: "hi <b> & \"q\""}, nil,
			`{"model":"m","messages":[{"role":"user","content":"hi <b> & \"q\""}],"max_tokens":8,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`},
		{"chat full", contract.Case{API: "chat", Stream: true, MaxTokens: 32, Sampling: &contract.Sampling{Temperature: 0.7, TopP: &topP, IgnoreEOS: true, Stop: []string{"\n\n"}}},
			Prompt{ID: "a", Text: "hi", System: "be brief"}, &seed,
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":32,"temperature":0.7,"top_p":0.9,"seed":100,"stop":["\n\n"],"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`},
		{"completions", contract.Case{API: "completions", Stream: true, MaxTokens: 4, Sampling: &contract.Sampling{Temperature: 1}}, Prompt{ID: "a", Text: "x", System: "s"}, &seed,
			`{"model":"m","prompt":"s\n\nx","max_tokens":4,"temperature":1,"seed":100,"stream":true,"stream_options":{"include_usage":true}}`},
		{"not streamed", contract.Case{API: "chat", MaxTokens: 4, Sampling: &contract.Sampling{}}, Prompt{ID: "a", Text: "x"}, nil,
			`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":4,"temperature":0,"stream":false}`},
	}
	for _, tt := range tests {
		got, err := Body(&tt.c, "m", tt.p, tt.seed)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s (%v)", tt.name, got, tt.want, err)
		}
	}
}

func TestRequestSeed(t *testing.T) {
	s := int64(1<<53 - 2)
	if got := requestSeed(&contract.Sampling{Seed: &s}, 3); *got != 1 {
		t.Fatalf("wrap: %d", *got)
	}
	s = 1234
	if got := requestSeed(&contract.Sampling{Seed: &s}, 6); *got != 1240 {
		t.Fatalf("%d", *got)
	}
	if requestSeed(&contract.Sampling{}, 1) != nil || requestSeed(nil, 1) != nil {
		t.Fatal("seed without a sampling seed")
	}
}
