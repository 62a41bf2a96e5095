package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	"image/png"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// Images (a serving case's images): each request's user message carries count PNG images of
// width x height pixels, generated from the prompt's id: image k's pixels are the bytes of a
// SplitMix64 stream seeded with FNV-1a 64 of "<prompt id>\x00<k>", three a pixel (RGB, opaque),
// encoded by image/png at png.NoCompression (stored deflate blocks, so the bytes do not depend on a
// compressor's choices) and sent as a base64 data URL. The same prompt always sends the same
// images, so a row is repeatable and two engines get the same inputs. The client cannot count an
// image's tokens (each engine's vision encoder decides them): its prompt count is the text's, and
// the record says how many images it did not count (client_tokens.images_not_counted).

// Part is a content part of a user message that carries images.
type Part struct {
	Type string  `json:"type"`
	Text *string `json:"text,omitempty"`
	// ImageURL is a *ImageURL on chat ({"url": ...}), the URL string on the Responses API.
	ImageURL any `json:"image_url,omitempty"`
}

type ImageURL struct {
	URL string `json:"url"`
}

// imageURLs are the data URLs of prompt id's images under spec.
func imageURLs(spec *contract.Images, id string) ([]string, error) {
	out := make([]string, spec.Count)
	for k := range out {
		b, err := ImagePNG(id, k, int(spec.Width), int(spec.Height))
		if err != nil {
			return nil, err
		}
		out[k] = "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
	}
	return out, nil
}

// ImagePNG is image k of prompt id (see Images).
func ImagePNG(id string, k, w, h int) ([]byte, error) {
	hs := fnv.New64a()
	fmt.Fprintf(hs, "%s\x00%d", id, k)
	rng := metric.SplitMix64{State: hs.Sum64()}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	var word uint64
	left := 0
	for i := 0; i < len(img.Pix); i += 4 {
		for c := range 3 {
			if left == 0 {
				word, left = rng.Next(), 8
			}
			img.Pix[i+c] = byte(word)
			word >>= 8
			left--
		}
		img.Pix[i+3] = 0xff
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode image %d of prompt %s: %w", k, id, err)
	}
	return buf.Bytes(), nil
}

// MarshalJSON writes a message whose Parts are set with a content array, else content as a
// string, HTML characters unescaped as the body encoder writes them.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.Parts != nil {
		return EncodeJSON(struct {
			Role    string `json:"role"`
			Content []Part `json:"content"`
		}{m.Role, m.Parts})
	}
	switch {
	case m.ToolCalls != nil:
		return EncodeJSON(struct {
			Role      string     `json:"role"`
			Content   string     `json:"content"`
			ToolCalls []ToolCall `json:"tool_calls"`
		}{m.Role, m.Content, m.ToolCalls})
	case m.Role == "tool":
		return EncodeJSON(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{m.Role, m.ToolCallID, m.Content})
	}
	return EncodeJSON(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{m.Role, m.Content})
}

// UnmarshalJSON reads a message whose content is a string or an array of parts: Content is the
// text parts joined by "\n" (the one text part a client message carries), Images counts the
// image parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	m.Role = w.Role
	if c := bytes.TrimSpace(w.Content); len(c) > 0 && c[0] == '[' {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return err
		}
		text := ""
		for _, p := range parts {
			switch p.Type {
			case "text", "input_text":
				if text != "" {
					text += "\n"
				}
				text += p.Text
			default:
				m.Images++
			}
		}
		m.Content = text
		return nil
	}
	return json.Unmarshal(w.Content, &m.Content)
}

// userMessage is the user message of prompt p: its text, with the case's images as parts after
// it (input_text and input_image parts on the Responses API).
func userMessage(c *contract.Case, p Prompt) (Message, error) {
	m := Message{Role: "user", Content: p.Text}
	if c.Images == nil {
		return m, nil
	}
	urls, err := imageURLs(c.Images, p.ID)
	if err != nil {
		return m, err
	}
	text := p.Text
	responses := c.API == contract.ServingCaseAPIResponses
	if responses {
		m.Parts = append(m.Parts, Part{Type: "input_text", Text: &text})
	} else {
		m.Parts = append(m.Parts, Part{Type: "text", Text: &text})
	}
	for _, u := range urls {
		if responses {
			m.Parts = append(m.Parts, Part{Type: "input_image", ImageURL: u})
		} else {
			m.Parts = append(m.Parts, Part{Type: "image_url", ImageURL: &ImageURL{URL: u}})
		}
	}
	return m, nil
}
