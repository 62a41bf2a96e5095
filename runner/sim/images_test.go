package sim_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

func dataURL(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }

// TestImages: a model that takes images counts image_tokens per image part in prompt_tokens, and
// an image's bytes change the completion (the same bytes give the same one), on chat and on the
// Responses API; a text-only model, a remote URL and a payload that is not base64 are refused.
func TestImages(t *testing.T) {
	cfg := fastConfig()
	cfg.ImageTokens = 100
	ts := start(t, cfg, true)
	ask := func(ts *testServer, img string) (int, int, string) {
		t.Helper()
		body := chatBody("qualsim-tiny", "", 3)
		body["messages"] = []map[string]any{{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "what is this"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}},
		}}}
		resp, b, err := ts.post("/v1/chat/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Choices []struct{ Message struct{ Content string } }
			Usage   struct {
				Prompt int `json:"prompt_tokens"`
			}
		}
		_ = json.Unmarshal(b, &r)
		if resp.StatusCode != 200 {
			return resp.StatusCode, 0, string(b)
		}
		return 200, r.Usage.Prompt, r.Choices[0].Message.Content
	}
	code, prompt, a := ask(ts, dataURL([]byte("png one")))
	if code != 200 || prompt != 1+3+3+100 {
		t.Fatalf("image request: %d, prompt tokens %d (%s); want 200 and 107", code, prompt, a)
	}
	if _, _, again := ask(ts, dataURL([]byte("png one"))); again != a {
		t.Errorf("the same image gave %q then %q", a, again)
	}
	if _, _, other := ask(ts, dataURL([]byte("png two"))); other == a {
		t.Errorf("another image gave the same completion %q", a)
	}
	for _, url := range []string{"https://example.com/cat.png", "data:image/png;base64,%%%", "data:text/plain;base64,aGk=", "data:image/png,raw"} {
		if code, _, msg := ask(ts, url); code != 400 {
			t.Errorf("image %q: %d %s; want 400", url, code, msg)
		}
	}
	if code, _, msg := ask(start(t, fastConfig(), true), dataURL([]byte("png one"))); code != 400 {
		t.Errorf("text-only model: %d %s; want 400", code, msg)
	}
	body := map[string]any{"model": "qualsim-tiny", "max_output_tokens": 3, "input": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "input_text", "text": "what is this"},
		map[string]any{"type": "input_image", "image_url": dataURL([]byte("png one"))},
	}}}}
	resp, b, err := ts.post("/v1/responses", body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("responses with an image: %v %v %s", resp, err, b)
	}
	var r struct {
		Output []struct {
			Content []struct{ Text string }
		}
		Usage struct {
			Input int `json:"input_tokens"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Usage.Input != 107 || r.Output[0].Content[0].Text != a {
		t.Fatalf("responses with an image: %s; want 107 input tokens and the chat answer %q", b, a)
	}
	if v := metric(t, ts, "qualsim_prompt_images_total"); v != 4 {
		t.Errorf("qualsim_prompt_images_total %v, want 4", v)
	}
}
