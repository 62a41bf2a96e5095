package promtext

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// vllmPage is the shape of vLLM's page (prometheus_client, text format 0.0.4): namespaced
// families, _created gauges, a histogram, escaped label values.
const vllmPage = `# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 160.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 88.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0.0
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 4.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 2.5
# HELP http_requests_total Total number of requests by method, status and handler.
# TYPE http_requests_total counter
http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"} 12.0 1700000000000
http_requests_total{ handler = "/a\"b\\c\n" , method="GET", } 1e0
# a free comment
untyped_thing 7

# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.5"} 0.1
rpc_duration_seconds_sum -1.5
rpc_duration_seconds_count 3
`

func TestParse(t *testing.T) {
	got, err := Parse([]byte(vllmPage))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, s.Name+s.Labels+"="+strconv.FormatFloat(s.Value, 'g', -1, 64))
	}
	want := []string{
		`http_requests_total{handler="/a\"b\\c\n",method="GET"}=1`,
		`http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"}=12`,
		`rpc_duration_seconds_count=3`,
		`rpc_duration_seconds_sum=-1.5`,
		`vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"}=4`,
		`vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"}=2.5`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="m"}=88`,
		`vllm:prefix_cache_queries_total{engine="0",model_name="m"}=160`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("samples\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestParseRefusals: each malformed page is refused with ErrPage and its line.
func TestParseRefusals(t *testing.T) {
	for _, tc := range []struct{ name, page, want string }{
		{"no value", "a_total\n", "want a value"},
		{"value not a number", "a_total x\n", "not a number"},
		{"hex value", "a_total 0x10\n", "not a number"},
		{"Go's inf", "a_total inf\n", "not a number"},
		{"three fields", "a_total 1 2 3\n", "want a value"},
		{"bad timestamp", "a_total 1 1.5\n", "timestamp"},
		{"bad label name", "a_total{0a=\"x\"} 1\n", "label name"},
		{"unquoted label", "a_total{a=x} 1\n", "quoted value"},
		{"unterminated label", "a_total{a=\"x} 1\n", "unterminated"},
		{"bad escape", "a_total{a=\"\\t\"} 1\n", "escape"},
		{"label twice", "a_total{a=\"x\",a=\"y\"} 1\n", "given twice"},
		{"no separator", "a_total{a=\"x\" b=\"y\"} 1\n", "expected after"},
		{"value glued to labels", "a_total{a=\"x\"}1\n", "want a value"},
		{"series twice", "# TYPE a_total counter\na_total 1\na_total 2\n", "given twice"},
		{"series twice, labels reordered", "# TYPE a counter\na{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 2\n", "given twice"},
		{"second TYPE", "# TYPE a counter\n# TYPE a counter\n", "second TYPE"},
		{"second HELP", "# HELP a x\n# HELP a y\n", "second HELP"},
		{"TYPE after samples", "a 1\n# TYPE a counter\n", "after its samples"},
		{"unknown type", "# TYPE a countr\n", "unknown type"},
		{"TYPE without type", "# TYPE a\n", "one type"},
		{"bad HELP name", "# HELP 1a x\n", "not a metric name"},
		{"family split", "# TYPE a counter\na 1\n# TYPE b counter\nb 1\na{x=\"1\"} 2\n", "must be together"},
		{"negative counter", "# TYPE a counter\na -1\n", "negative"},
		{"NaN counter", "# TYPE a counter\na NaN\n", "not a finite number"},
		{"Inf count", "# TYPE h histogram\nh_count +Inf\n", "not a finite number"},
		{"bucket without le", "# TYPE h histogram\nh_bucket 1\n", "without an le"},
		{"bare histogram sample", "# TYPE h histogram\nh 1\n", "a histogram's samples"},
		{"not UTF-8", "a_total{a=\"\xff\"} 1\n", "not UTF-8"},
		{"not a sample", "{a=\"x\"} 1\n", "not a sample line"},
		{"long line", "a_total{a=\"" + strings.Repeat("x", MaxLineBytes) + "\"} 1\n", "more than"},
		{"many labels", "a_total{" + manyLabels(MaxLabels+1) + "} 1\n", "more than 64 labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.page))
			if !errors.Is(err, ErrPage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
				t.Errorf("Parse(%.80q) = %v, want ErrPage saying %q", tc.page, err, tc.want)
			}
		})
	}
	if _, err := Parse(make([]byte, MaxPageBytes+1)); !errors.Is(err, ErrPage) {
		t.Errorf("a page over MaxPageBytes: %v", err)
	}
	var sb strings.Builder
	sb.WriteString("# TYPE a counter\n")
	for i := 0; i <= MaxSeries; i++ {
		sb.WriteString("a{i=\"")
		sb.WriteString(strconv.Itoa(i))
		sb.WriteString("\"} 1\n")
	}
	if _, err := Parse([]byte(sb.String())); !errors.Is(err, ErrPage) || !strings.Contains(err.Error(), "cumulative series") {
		t.Errorf("more than MaxSeries series: %v", err)
	}
}

// TestDeltas: a new series counts from zero; a decreased or vanished one is left out, warned.
func TestDeltas(t *testing.T) {
	before := []Sample{{Name: "a", Value: 5}, {Name: "gone", Value: 1}, {Name: "r", Value: 9}}
	after := []Sample{{Name: "a", Value: 8}, {Name: "new", Labels: `{x="1"}`, Value: 2}, {Name: "r", Value: 1}}
	ds, warns := Deltas(before, after)
	if len(ds) != 2 || ds[0] != (SeriesDelta{Name: "a", Before: 5, After: 8, Delta: 3}) || ds[1] != (SeriesDelta{Name: "new", Labels: `{x="1"}`, After: 2, Delta: 2}) {
		t.Errorf("deltas %+v", ds)
	}
	if len(warns) != 2 || !strings.HasPrefix(warns[0], "gone vanished") || !strings.HasPrefix(warns[1], "r decreased from 9 to 1") {
		t.Errorf("warnings %q", warns)
	}
}

// FuzzParse: Parse never panics; what it accepts is sorted, unique, finite, and compared with
// itself moves by nothing.
func FuzzParse(f *testing.F) {
	f.Add([]byte(vllmPage))
	f.Add([]byte("# TYPE a counter\na{x=\"1\"} 1\n"))
	f.Add([]byte("a_total{a=\"\\\\\\\"\\n\",} 1 2\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\nh_sum 0.5\n"))
	f.Fuzz(func(t *testing.T, page []byte) {
		ss, err := Parse(page)
		if err != nil {
			if !errors.Is(err, ErrPage) {
				t.Fatalf("error %v does not wrap ErrPage", err)
			}
			return
		}
		for i, s := range ss {
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				t.Fatalf("sample %+v not finite", s)
			}
			if i > 0 && ss[i-1].Name+"\x00"+ss[i-1].Labels >= s.Name+"\x00"+s.Labels {
				t.Fatalf("samples not sorted and unique: %+v then %+v", ss[i-1], s)
			}
		}
		ds, warns := Deltas(ss, ss)
		if len(ds) != len(ss) || len(warns) != 0 {
			t.Fatalf("a page against itself: %d deltas of %d series, warnings %q", len(ds), len(ss), warns)
		}
		for _, d := range ds {
			if d.Delta != 0 {
				t.Fatalf("a page against itself moved %+v", d)
			}
		}
	})
}

func manyLabels(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString("l" + strconv.Itoa(i) + "=\"x\",")
	}
	return sb.String()
}

// BenchmarkParse parses a vLLM-like page of 2,000 counter series and 200 histograms (about 290
// KiB) and compares it with itself, as a row's scrapes are.
func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("# HELP vllm:prompt_tokens_total Prompt tokens.\n# TYPE vllm:prompt_tokens_total counter\n")
	for i := range 2000 {
		sb.WriteString(`vllm:prompt_tokens_total{engine="` + strconv.Itoa(i) + `",model_name="meta-llama/Llama-3.1-8B-Instruct"} ` + strconv.Itoa(i*977) + ".0\n")
	}
	for h := range 200 {
		name := "vllm:latency_" + strconv.Itoa(h) + "_seconds"
		sb.WriteString("# TYPE " + name + " histogram\n")
		for _, le := range []string{"0.001", "0.01", "0.1", "1.0", "10.0", "+Inf"} {
			sb.WriteString(name + `_bucket{le="` + le + `",model_name="m"} 5.0` + "\n")
		}
		sb.WriteString(name + "_count{model_name=\"m\"} 5.0\n" + name + "_sum{model_name=\"m\"} 1.25\n")
	}
	page := []byte(sb.String())
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		ss, err := Parse(page)
		if err != nil {
			b.Fatal(err)
		}
		Deltas(ss, ss)
	}
}
