package sim

import (
	"bufio"
	"io"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Ground-truth record kinds.
const (
	KindHeaders = "headers" // response headers flushed (event 0)
	KindSlot    = "slot"    // the request got its decode slot (event 0, nothing written)
	KindRole    = "role"    // the role-only chat prelude
	KindContent = "content" // an event carrying completion text (not a contract value: qualsim ground truth)
	// KindReasoning is an event carrying reasoning text (Config.Reasoning; not a contract value).
	KindReasoning = "reasoning" // not a contract value: qualsim ground truth
	// KindPart is a Responses API event that opens or closes an output item or content part.
	KindPart   = "part"
	KindFinish = "finish" // the event carrying finish_reason
	KindUsage  = "usage"  // the usage record (not a contract value: qualsim ground truth)
	KindDone   = "done"   // data: [DONE] (not a contract value: qualsim ground truth)
	KindBody   = "body"   // a whole non-streamed response (event 1)
)

// An event a fault changed gets "+" and the fault's name appended to its kind:
// "content+stall", "content+malformed-json", "finish+huge-event", "role+missing-data-prefix".

// monoAnchor pairs a time.Time with a CLOCK_MONOTONIC reading taken at the same instant, so
// that later time.Time values convert to CLOCK_MONOTONIC nanoseconds without a system call. Go's
// monotonic clock is CLOCK_MONOTONIC on Linux, so the conversion does not drift; its error is
// half the width of the bracket around the one clock_gettime call (well under a microsecond).
type monoAnchor struct {
	t  time.Time
	ns int64
}

var anchor = sync.OnceValue(func() monoAnchor {
	best := monoAnchor{}
	width := time.Duration(1<<63 - 1)
	for range 5 {
		var ts unix.Timespec
		t1 := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			panic("sim: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
		}
		t2 := time.Now()
		if w := t2.Sub(t1); w < width {
			width = w
			best = monoAnchor{t: t1.Add(w / 2), ns: ts.Nano()}
		}
	}
	return best
})

// MonotonicNanos converts t (which must carry Go's monotonic reading, as time.Now's result
// does) to nanoseconds of CLOCK_MONOTONIC, the clock of the ground-truth log's t_mono_ns: time
// since an unspecified point (boot on Linux), not counting suspend, shared by every process on
// the host.
func MonotonicNanos(t time.Time) int64 {
	a := anchor()
	return a.ns + int64(t.Sub(a.t))
}

type gtRecord struct {
	id    string
	event int
	t     time.Time
	bytes int
	kind  string
}

// groundTruth writes one JSON line per record from a buffered channel on its own goroutine, so
// the stream that produced a record never waits for the file. A full channel drops the record
// and counts it.
type groundTruth struct {
	ch      chan gtRecord
	flushes chan chan struct{}
	quit    chan struct{}
	done    chan struct{}
	dropped func()
	err     error // the first write error; read after done is closed
}

func startGroundTruth(w io.Writer, dropped func()) *groundTruth {
	g := &groundTruth{
		ch:      make(chan gtRecord, groundTruthQueue),
		flushes: make(chan chan struct{}),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		dropped: dropped,
	}
	go g.run(bufio.NewWriterSize(w, 64<<10))
	return g
}

func (g *groundTruth) record(r gtRecord) {
	if g == nil {
		return
	}
	select {
	case g.ch <- r:
	default:
		g.dropped()
	}
}

// flush waits until every record sent before it is written out.
func (g *groundTruth) flush() {
	if g == nil {
		return
	}
	ack := make(chan struct{})
	select {
	case g.flushes <- ack:
		<-ack
	case <-g.done:
	}
}

// close writes what is queued, flushes and stops the writer; it returns the first write error.
func (g *groundTruth) close() error {
	if g == nil {
		return nil
	}
	close(g.quit)
	<-g.done
	return g.err
}

func (g *groundTruth) run(bw *bufio.Writer) {
	defer close(g.done)
	tick := time.NewTicker(groundTruthFlushEvery)
	defer tick.Stop()
	var line []byte
	write := func(r gtRecord) {
		line = appendGroundTruth(line[:0], r)
		if _, err := bw.Write(line); err != nil && g.err == nil {
			g.err = err
		}
	}
	drain := func() {
		for {
			select {
			case r := <-g.ch:
				write(r)
			default:
				if err := bw.Flush(); err != nil && g.err == nil {
					g.err = err
				}
				return
			}
		}
	}
	for {
		select {
		case r := <-g.ch:
			write(r)
		case <-tick.C:
			if err := bw.Flush(); err != nil && g.err == nil {
				g.err = err
			}
		case ack := <-g.flushes:
			drain()
			close(ack)
		case <-g.quit:
			drain()
			return
		}
	}
}

// appendGroundTruth renders {"request_id":...,"event":N,"t_mono_ns":N,"bytes":N,"kind":...}.
func appendGroundTruth(b []byte, r gtRecord) []byte {
	b = append(b, `{"request_id":`...)
	b = appendJSONString(b, r.id)
	b = append(b, `,"event":`...)
	b = appendInt(b, r.event)
	b = append(b, `,"t_mono_ns":`...)
	b = strconv.AppendInt(b, MonotonicNanos(r.t), 10)
	b = append(b, `,"bytes":`...)
	b = appendInt(b, r.bytes)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, r.kind)
	return append(b, "}\n"...)
}
