// Package telemetry samples device telemetry (power, energy, clocks, utilization, memory,
// temperature, throttle reasons, ECC and Xid counters) on its own locked OS thread at a declared
// interval while serving rows run, and summarises a row's samples into diagnostic metrics.
//
// A reading is a reading only: nothing here pauses, extends or gates anything on a temperature or
// any other value. The sampler never touches the measured client: it has its own goroutine wired
// to its own thread, its own NVML calls or sysfs reads, and a bounded buffer.
package telemetry

import (
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Reader takes one reading of each of its devices.
type Reader interface {
	// Read appends one sample per device, each stamped t (ns from the campaign epoch).
	Read(t int64, out []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc
	// Close releases what the reader holds (NVML's reference, an event set).
	Close()
}

// MaxSamples bounds a sampler's buffer: past it, readings are counted as dropped, never kept.
const MaxSamples = 1 << 20

// Sampler reads its readers every interval until Stop.
type Sampler struct {
	interval time.Duration
	epoch    time.Time
	readers  []Reader
	mu       sync.Mutex
	samples  []contract.TelemetrySampleDoc
	dropped  int
	stop     chan struct{}
	done     chan struct{}
}

// Start starts sampling at once and then every interval, on a goroutine locked to its own OS
// thread (so a slow driver call blocks that thread only). Times are ns since epoch.
func Start(interval time.Duration, epoch time.Time, readers ...Reader) *Sampler {
	s := &Sampler{interval: interval, epoch: epoch, readers: readers, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	var buf []contract.TelemetrySampleDoc
	for {
		buf = buf[:0]
		now := time.Since(s.epoch).Nanoseconds()
		for _, r := range s.readers {
			buf = r.Read(now, buf)
		}
		s.mu.Lock()
		if len(s.samples)+len(buf) > MaxSamples {
			s.dropped += len(buf)
		} else {
			s.samples = append(s.samples, buf...)
		}
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// Stop takes one last reading, stops the sampler, closes its readers and returns every sample
// (ordered by time, then device) and how many readings were dropped at MaxSamples.
func (s *Sampler) Stop() ([]contract.TelemetrySampleDoc, int) {
	close(s.stop)
	<-s.done
	now := time.Since(s.epoch).Nanoseconds()
	var last []contract.TelemetrySampleDoc
	for _, r := range s.readers {
		last = r.Read(now, last)
		r.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, last...)
	sort.SliceStable(s.samples, func(i, j int) bool {
		if s.samples[i].TNs != s.samples[j].TNs {
			return s.samples[i].TNs < s.samples[j].TNs
		}
		return s.samples[i].Device < s.samples[j].Device
	})
	return s.samples, s.dropped
}

// Window returns, per device, the samples within [start, end] plus the last one before start
// and the first one after end: what a row's summary needs to interpolate its bounds.
func Window(samples []contract.TelemetrySampleDoc, start, end int64) []contract.TelemetrySampleDoc {
	byDev, devs := byDevice(samples)
	var out []contract.TelemetrySampleDoc
	for _, d := range devs {
		xs := byDev[d]
		lo, hi := 0, len(xs)-1
		for lo+1 < len(xs) && xs[lo+1].TNs <= start {
			lo++
		}
		for hi-1 >= 0 && xs[hi-1].TNs >= end {
			hi--
		}
		if lo <= hi {
			out = append(out, xs[lo:hi+1]...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].TNs != out[j].TNs {
			return out[i].TNs < out[j].TNs
		}
		return out[i].Device < out[j].Device
	})
	return out
}

func newSample(t, device int64, source contract.SampleSource) contract.TelemetrySampleDoc {
	return contract.TelemetrySampleDoc{Schema: contract.TelemetrySampleSchema, TNs: t, Device: device, Source: source, ThrottleReasons: []contract.ThrottleReason{}, Errors: []string{}}
}

func ptr[T any](v T) *T { return &v }

// byDevice groups samples by device, keeping each device's samples in order; devs lists the
// devices in the order of their first sample.
func byDevice(samples []contract.TelemetrySampleDoc) (byDev map[int64][]contract.TelemetrySampleDoc, devs []int64) {
	byDev = map[int64][]contract.TelemetrySampleDoc{}
	for _, x := range samples {
		if _, ok := byDev[x.Device]; !ok {
			devs = append(devs, x.Device)
		}
		byDev[x.Device] = append(byDev[x.Device], x)
	}
	return byDev, devs
}
