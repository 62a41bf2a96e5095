//go:build cgo

package telemetry

import (
	"crypto/sha256"
	"testing"
	"time"
)

// work is a fixed CPU-bound task standing in for the measured process (~10 ms).
func work() {
	buf := make([]byte, 4<<20)
	for i := 0; i < 4; i++ {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
	}
}

// BenchmarkSamplerOverhead measures what the sampler costs the process it runs beside: each
// iteration times the same work idle (no sampler) and with a sampler reading eight NVML devices
// (go-nvml's mock DGX H100, so the cost is qualkit's, not the driver's) at the interval, in the
// same run. overhead-% is (sampled / idle - 1) x 100 over all iterations.
func BenchmarkSamplerOverhead(b *testing.B) {
	for _, iv := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond, time.Millisecond} {
		b.Run(iv.String(), func(b *testing.B) {
			dgx := newBusyDGX()
			ids := map[int64]string{}
			for i, d := range dgx.Devices {
				u, _ := d.GetUUID()
				ids[int64(i+1)] = u
			}
			var idle, sampled time.Duration
			var samples int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				work()
				idle += time.Since(t0)
				r, err := NewNVMLReader(dgx, ids)
				if err != nil {
					b.Fatal(err)
				}
				s := Start(iv, time.Now(), r)
				t1 := time.Now()
				work()
				sampled += time.Since(t1)
				xs, _ := s.Stop()
				samples += len(xs)
			}
			b.ReportMetric(100*(float64(sampled)/float64(idle)-1), "overhead-%")
			b.ReportMetric(float64(samples)/sampled.Seconds(), "samples/s")
		})
	}
}
