package record

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonscan"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Record is one request record reduced to what the checks read; times are nanoseconds from the
// campaign's monotonic epoch. (Its flags are kept together after the numbers: Read holds a
// Record per line, and scattered bools would pad it by about an eighth.)
type Record struct {
	Line         int // 0-based line in its file
	CaseID       string
	Concurrency  int64
	Repetition   int64
	Index        int64
	PromptID     string
	Sched        int64
	Send, Header int64
	End, Close   int64
	// Sent is t_sent_ns when HasSent (records before it existed have none).
	Sent    int64
	Content []int64 // arrival of each token event (content, reasoning or tool_call), in order
	// FirstContent is the first answer event's arrival (content or tool_call) when
	// HasFirstContent.
	FirstContent int64
	// FirstToolCall is the first tool_call event's arrival when HasFirstToolCall.
	FirstToolCall int64
	// ToolCalls counts the record's tool_calls, ToolCallsValid those with valid true; Calls are
	// the calls themselves.
	ToolCalls, ToolCallsValid int64
	Calls                     []contract.ToolCall
	// Reasoning is usage.reasoning_tokens when HasReasoning.
	Reasoning                      int64
	CompletionTokens, PromptTokens int64 // completion and prompt tokens
	ErrClass                       string
	AssertFail                     int    // assertions with passed false
	Output                         string // output digest, "" when null
	// cached is cached_prompt_tokens when hasCached (records before it existed have none).
	cached int64
	// corpusIndex and cycle place a measured request in the cycled corpus when hasCorpus
	// (records before they existed have neither).
	CorpusIndex, Cycle int64
	// session is the record's session block (a session row's, check/rowcheck/session.go), sessionIndex
	// its corpus_index (the session's position in the corpus); nil and 0 otherwise.
	Session      *contract.SessionTurn
	SessionIndex int64
	// Trace is the record's trace_entry (a replay of a trace whose entries name parents); nil
	// without one.
	Trace *contract.TraceEntry
	// client is client_tokens when hasClient (clientN when hasClientN: its completion count).
	Client  contract.ClientTokens
	clientN int64
	// Status is status_code when HasStatus, Seed is seed when HasSeed (null: neither), and
	// Assertions are the kinds of the record's assertions, in order, one byte each (AssertionKinds).
	Status, Seed int64
	Assertions   string
	// BodyDigest is body_digest's sha256 (check/body.go recomputes it).
	BodyDigest [32]byte

	Warmup   bool
	HasSend  bool
	HasSent  bool
	HasHdr   bool
	HasEnd   bool
	HasClose bool
	// Reasoned says a reasoning event came.
	Reasoned         bool
	HasFirstContent  bool
	HasFirstToolCall bool
	HasReasoning     bool
	HasUsage         bool
	Failed           bool // error != null
	hasCached        bool
	Priming          bool // a warm row's priming request
	HasCorpus        bool
	HasClient        bool
	hasClientN       bool
	HasStatus        bool
	HasSeed          bool
}

// Set is what reading one JSON Lines file of request records learned.
type Set struct {
	Records []Record // the valid lines, in file order
	lines   int
	// invalid lists the violations of invalid lines (pointers prefixed with /<line>), at most
	// MaxFindingsPerCheck; invalidLines counts the invalid lines.
	Invalid      []schemas.Violation
	InvalidLines int
	// tooMany is set when the file has more than MaxRecordsPerFile lines.
	TooMany bool
}

// Read reads a JSON Lines file of request records from r, hashing every byte, validating
// every line against the request record contract and keeping the valid ones. A line is accepted
// by the fast path (Parse) or else checked by schemas.CheckDocument, whose verdict decides;
// Parse never accepts a line CheckDocument would reject (FuzzParseRecord checks that).
func Read(ctx context.Context, r io.Reader) (digest string, size int64, set *Set, err error) {
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, h)}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 0, 1<<20), limits.MaxDocumentBytes+1)
	set = &Set{}
	interner := map[string]string{}
	st := &parseState{interner: interner}
	var recs chunks
	for sc.Scan() {
		if set.lines%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return "", 0, nil, err
			}
		}
		line := sc.Bytes()
		i := set.lines
		set.lines++
		if set.lines > limits.MaxRecordsPerFile {
			set.TooMany = true
			break
		}
		rec, ok := parse(line, st)
		if !ok {
			var good bool
			rec, good, err = slowRecord(line, i, set)
			if err != nil {
				return "", 0, nil, err
			}
			if !good {
				continue
			}
			rec.CaseID = intern(interner, rec.CaseID)
			rec.PromptID = intern(interner, rec.PromptID)
		}
		rec.Line = i
		recs.add(rec)
	}
	set.Records = recs.all()
	if err := sc.Err(); err != nil {
		if !errors.Is(err, bufio.ErrTooLong) {
			return "", 0, nil, err
		}
		set.InvalidLines++
		set.addInvalid(schemas.Violation{Pointer: fmt.Sprintf("/%d", set.lines), Err: fmt.Errorf("%w: line longer than %d bytes", jsonstrict.ErrTooLarge, limits.MaxDocumentBytes)})
	}
	// Hash what the scanner did not read (after a too-long line or too many lines).
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return "", 0, nil, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), cr.n, set, nil
}

// internBytes is intern for a string still in bytes: no allocation when m holds it.
func internBytes(m map[string]string, b []byte) string {
	if v, ok := m[string(b)]; ok {
		return v
	}
	s := string(b)
	m[s] = s
	return s
}

// chunks collects a file's records in chunks of doubling size, copied once into one slice of
// their exact number at the end: append's growth (by a quarter, for a long slice) would copy a
// file's records about four times over, and leave up to a quarter of the slice unused.
type chunks struct {
	full [][]Record
	n    int
	cur  []Record
}

func (c *chunks) add(r Record) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]Record, 0, min(max(2*cap(c.cur), 16), 1<<14))
	}
	c.cur = append(c.cur, r)
	c.n++
}

func (c *chunks) all() []Record {
	if len(c.full) == 0 {
		return c.cur
	}
	out := make([]Record, 0, c.n)
	for _, f := range c.full {
		out = append(out, f...)
	}
	return append(out, c.cur...)
}

func intern(m map[string]string, s string) string {
	if v, ok := m[s]; ok {
		return v
	}
	m[s] = s
	return s
}

func (s *Set) addInvalid(v schemas.Violation) {
	if len(s.Invalid) < limits.MaxFindingsPerCheck {
		s.Invalid = append(s.Invalid, v)
	}
}

// slowRecord validates a line the fast path declined with schemas.CheckDocument and, when it is
// a valid request record, decodes it.
func slowRecord(line []byte, i int, set *Set) (Record, bool, error) {
	out, err := schemas.CheckDocument(line)
	if err != nil {
		return Record{}, false, fmt.Errorf("check line %d: %w", i+1, err)
	}
	prefix := fmt.Sprintf("/%d", i)
	if out.Valid() && out.Contract.Name != contract.RequestRecord {
		out.Violations = []schemas.Violation{{Pointer: "/schema", Err: fmt.Errorf("%w: %s, want qualkit.request-record.v1", reason.ErrWrongContract, out.Contract.SchemaID)}}
	}
	if !out.Valid() {
		set.InvalidLines++
		for _, v := range out.Violations {
			set.addInvalid(schemas.Violation{Pointer: prefix + v.Pointer, Err: v.Err})
		}
		return Record{}, false, nil
	}
	var doc contract.RequestRecordDoc
	if err := jsonstrict.DecodeInto(line, &doc); err != nil {
		return Record{}, false, fmt.Errorf("decode line %d: %w", i+1, err)
	}
	return FromDoc(&doc), true, nil
}

// FromDoc reduces a decoded request record.
func FromDoc(d *contract.RequestRecordDoc) Record {
	r := Record{CaseID: d.CaseID, Concurrency: d.Row.Concurrency, Repetition: d.Row.Repetition, Index: d.Index,
		Warmup: d.Warmup, PromptID: d.PromptID, Sched: d.TSchedNs, Failed: d.Error != nil}
	if d.TSendNs != nil {
		r.Send, r.HasSend = *d.TSendNs, true
	}
	if d.TSentNs != nil {
		r.Sent, r.HasSent = *d.TSentNs, true
	}
	if d.THdrNs != nil {
		r.Header, r.HasHdr = *d.THdrNs, true
	}
	if d.TEndNs != nil {
		r.End, r.HasEnd = *d.TEndNs, true
	}
	if d.TCloseNs != nil {
		r.Close, r.HasClose = *d.TCloseNs, true
	}
	for _, e := range d.Events {
		r.addEvent(e.Kind, e.TNs)
	}
	if d.Usage != nil {
		r.HasUsage, r.CompletionTokens, r.PromptTokens = true, d.Usage.CompletionTokens, d.Usage.PromptTokens
		if d.Usage.ReasoningTokens != nil {
			r.Reasoning, r.HasReasoning = *d.Usage.ReasoningTokens, true
		}
	}
	if d.Error != nil {
		r.ErrClass = string(d.Error.Class)
	}
	kinds := make([]contract.AssertionOutcomeKind, len(d.Assertions))
	for i, a := range d.Assertions {
		if !a.Passed {
			r.AssertFail++
		}
		kinds[i] = a.Kind
	}
	r.Assertions = AssertionKinds(kinds)
	if d.StatusCode != nil {
		r.Status, r.HasStatus = *d.StatusCode, true
	}
	if d.Seed != nil {
		r.Seed, r.HasSeed = *d.Seed, true
	}
	if d.OutputDigest != nil {
		r.Output = *d.OutputDigest
	}
	decodeDigest(&r.BodyDigest, []byte(d.BodyDigest))
	if d.CachedPromptTokens != nil {
		r.cached, r.hasCached = *d.CachedPromptTokens, true
	}
	r.Priming = d.Priming
	if d.CorpusIndex != nil && d.Cycle != nil {
		r.CorpusIndex, r.Cycle, r.HasCorpus = *d.CorpusIndex, *d.Cycle, true
	}
	r.Trace = d.TraceEntry
	if d.Session != nil {
		r.Session = d.Session
		if d.CorpusIndex != nil {
			r.SessionIndex = *d.CorpusIndex
		}
	}
	if ct := d.ClientTokens; ct != nil {
		r.Client, r.HasClient = *ct, true
		r.clientN, r.hasClientN = metric.ClientCompletion(*ct)
	}
	r.Calls = d.ToolCalls
	for _, c := range d.ToolCalls {
		r.ToolCalls++
		if c.Valid {
			r.ToolCallsValid++
		}
	}
	return r
}

// addEvent adds an event of kind at t to the record's token events, as metric.AddTokenEvent
// reads event kinds (the runner's reading too).
func (r *Record) addEvent(kind contract.EventKind, t int64) {
	q := metric.Request{Content: r.Content, Reasoned: r.Reasoned, FirstContent: r.FirstContent, HasFirstContent: r.HasFirstContent,
		FirstToolCall: r.FirstToolCall, HasFirstToolCall: r.HasFirstToolCall}
	metric.AddTokenEvent(&q, kind, t)
	r.Content, r.Reasoned, r.FirstContent, r.HasFirstContent = q.Content, q.Reasoned, q.FirstContent, q.HasFirstContent
	r.FirstToolCall, r.HasFirstToolCall = q.FirstToolCall, q.HasFirstToolCall
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Parse is the fast path of request record validation: a single pass over one line that
// accepts only a conservative subset of the contract's JSON (no string escapes, ASCII strings,
// unsigned integers without exponent or fraction, at most 18 digits) and checks, within it,
// everything schemas.CheckDocument checks for a qualkit.request-record.v1: closed objects, every
// required member exactly once, types, enums, patterns, ranges, lengths and the semantic rules.
// It returns false for anything else; the caller then asks CheckDocument.
func Parse(b []byte) (Record, bool) { return parse(b, nil) }

// parse is Parse with the state Read keeps across the lines of a file (nil: none).
func parse(b []byte, st *parseState) (Record, bool) {
	p := lineParser{b: b, st: st}
	var r Record
	if len(b) > limits.MaxDocumentBytes {
		return r, false
	}
	ok := p.record(&r)
	if !ok {
		return Record{}, false
	}
	p.ws()
	if p.i != len(p.b) {
		return Record{}, false
	}
	switch n := len(r.Content); {
	case n == 0:
		r.Content = nil
	case st != nil:
		r.Content = r.Content[:n:n]
		if n <= cap(st.arena) { // in the arena (beyond it, append allocated)
			st.arena = st.arena[n:n]
		}
	}
	return r, true
}

// parseState is what Read's fast path keeps across the lines of a file, to read them with fewer
// allocations: the case and prompt ids already seen, and an arena the records' token arrivals
// are carved from (a record's Content is a full slice of it: an append copies it out).
type parseState struct {
	interner map[string]string
	arena    []int64 // free space: len 0, the chunk's rest as capacity
	chunk    int     // the size of the arena's last chunk
}

// An arena's chunks double from arenaFirst token arrivals (8 KiB: a file of a few records takes
// no more) to arenaChunk (512 KiB); a new one is taken when fewer than arenaFree are left (a
// record with more allocates beyond it, as append does).
const (
	arenaFirst = 1 << 10
	arenaChunk = 64 << 10
	arenaFree  = 1 << 8
)

// content is where a record's token arrivals are appended: the arena's free space.
func (st *parseState) content() []int64 {
	if cap(st.arena) < arenaFree {
		st.chunk = min(max(2*st.chunk, arenaFirst), arenaChunk)
		st.arena = make([]int64, 0, st.chunk)
	}
	return st.arena
}

type lineParser struct {
	b  []byte
	i  int
	st *parseState // nil: none (Parse)
}

// id reads a case or prompt id into a string, interned when the parser has a state.
func (p *lineParser) id(v []byte) string {
	if p.st == nil {
		return string(v)
	}
	return internBytes(p.st.interner, v)
}

func (p *lineParser) ws() { p.i = jsonscan.Space(p.b, p.i) }

func (p *lineParser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (p *lineParser) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	if p.i = jsonscan.Plain(p.b, p.i); p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	p.i++
	return p.b[start : p.i-1], true
}

// uint reads an unsigned integer of at most 18 digits, without leading zeros, fraction or exponent.
func (p *lineParser) uint() (int64, bool) {
	p.ws()
	start := p.i
	p.i = jsonscan.Digits(p.b, p.i)
	n := p.i - start
	if n == 0 || n > 18 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v := int64(0)
	for _, c := range p.b[start:p.i] {
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func (p *lineParser) lit(s string) bool {
	p.ws()
	if bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		end := p.i + len(s)
		if end < len(p.b) {
			if c := p.b[end]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
				return false
			}
		}
		p.i = end
		return true
	}
	return false
}

func (p *lineParser) null() bool { return p.lit("null") }

func (p *lineParser) boolean() (bool, bool) {
	switch {
	case p.lit("true"):
		return true, true
	case p.lit("false"):
		return false, true
	}
	return false, false
}

// optUint reads an integer or null.
func (p *lineParser) optUint() (int64, bool, bool) {
	if p.null() {
		return 0, false, true
	}
	v, ok := p.uint()
	return v, true, ok
}

// object reads the members of an object, calling member for each key; member returns false to
// reject. The keys must be distinct, which member enforces with its own bit set.
func (p *lineParser) object(member func(key []byte) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		k, ok := p.str()
		if !ok || !p.eat(':') || !member(k) {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// array reads the elements of an array, calling elem for each; at most max elements.
func (p *lineParser) array(max int, elem func() bool) bool {
	if !p.eat('[') {
		return false
	}
	if p.eat(']') {
		return true
	}
	for n := 1; ; n++ {
		if n > max || !elem() {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat(']')
	}
}

// seen tracks the members of a closed object by bit.
type seen uint32

func (s *seen) first(bit uint) bool {
	if *s&(1<<bit) != 0 {
		return false
	}
	*s |= 1 << bit
	return true
}

func isPortableID(s []byte) bool {
	if len(s) < 3 || len(s) > 128 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// decodeDigest sets sum to the 32 bytes of digest s ("sha256:" and 64 hex digits), reporting
// whether s is one.
func decodeDigest(sum *[32]byte, s []byte) bool {
	if len(s) != 71 {
		return false
	}
	_, err := hex.Decode(sum[:], s[7:])
	return err == nil
}

func IsDigest(s []byte) bool {
	if len(s) != 71 || !bytes.HasPrefix(s, []byte("sha256:")) {
		return false
	}
	for _, c := range s[7:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

const maxSafeInteger = 9007199254740991

// recordLimits are the request-record contract's limits the fast path checks, read from the
// exported schema (the CUE source is their one place). Byte lengths stand in for the schema's
// code-point lengths: a string within the byte limit is within the code-point limit, and one
// beyond it goes to the full check.
var recordLimits = func() (l struct {
	concurrencyMin, concurrencyMax, repetitionMax, eventsMax, assertionsMax, statusMin, statusMax int64
	detailMax, messageMin, messageMax                                                             int64
	toolCallsMax, toolIndexMax, toolIDMax, toolNameMax                                            int64
	traceParentsMin, traceParentsMax                                                              int64
}) {
	b := schemas.MustBoundsOf(contract.RequestRecord)
	l.concurrencyMin, l.concurrencyMax = b.IntLimit("row.concurrency", "minimum"), b.IntLimit("row.concurrency", "maximum")
	l.repetitionMax = b.IntLimit("row.repetition", "maximum")
	l.eventsMax, l.assertionsMax = b.IntLimit("events", "maxItems"), b.IntLimit("assertions", "maxItems")
	l.statusMin, l.statusMax = b.IntLimit("status_code", "minimum"), b.IntLimit("status_code", "maximum")
	l.detailMax = b.IntLimit("assertions[].detail", "maxLength")
	l.messageMin, l.messageMax = b.IntLimit("error.message", "minLength"), b.IntLimit("error.message", "maxLength")
	l.toolCallsMax, l.toolIndexMax = b.IntLimit("tool_calls", "maxItems"), b.IntLimit("tool_calls[].index", "maximum")
	l.toolIDMax, l.toolNameMax = b.IntLimit("tool_calls[].id", "maxLength"), b.IntLimit("tool_calls[].name", "maxLength")
	l.traceParentsMin, l.traceParentsMax = b.IntLimit("trace_entry.parents", "minItems"), b.IntLimit("trace_entry.parents", "maxItems")
	return l
}()

// maxTraceEntry is the largest entry index of a record's trace_entry (the contract's bound).
const maxTraceEntry = 999_999

// Member bits of a request record.
const (
	fSchema = iota
	fCaseID
	fRow
	fIndex
	fWarmup
	fPromptID
	fSeed
	fBodyDigest
	fTSched
	fTSend
	fTHdr
	fEvents
	fTEnd
	fTClose
	fStatus
	fUsage
	fFinish
	fOutput
	fAssertions
	fError
	fAll
	// Optional members (not part of fAll).
	fCorpusIndex
	fCycle
	fToolCalls
	fTraceEntry
	fTSent
)

func (p *lineParser) record(r *Record) bool {
	var s seen
	var lastT int64 = -1
	var total int64
	ok := p.object(func(k []byte) bool {
		switch string(k) {
		case "schema":
			v, ok := p.str()
			return s.first(fSchema) && ok && string(v) == contract.RequestRecordSchema
		case "case_id":
			v, ok := p.str()
			if !ok || !isPortableID(v) {
				return false
			}
			r.CaseID = p.id(v)
			return s.first(fCaseID) && ok && isPortableID(v)
		case "row":
			var rs seen
			ok := p.object(func(k []byte) bool {
				switch string(k) {
				case "concurrency":
					v, ok := p.uint()
					r.Concurrency = v
					return rs.first(0) && ok && v >= recordLimits.concurrencyMin && v <= recordLimits.concurrencyMax
				case "repetition":
					v, ok := p.uint()
					r.Repetition = v
					return rs.first(1) && ok && v <= recordLimits.repetitionMax
				}
				return false
			})
			return s.first(fRow) && ok && rs == 3
		case "index":
			v, ok := p.uint()
			r.Index = v
			return s.first(fIndex) && ok
		case "warmup":
			v, ok := p.boolean()
			r.Warmup = v
			return s.first(fWarmup) && ok
		case "prompt_id":
			v, ok := p.str()
			if !ok || !isPortableID(v) {
				return false
			}
			r.PromptID = p.id(v)
			return s.first(fPromptID) && ok && isPortableID(v)
		case "corpus_index":
			v, ok := p.uint()
			r.CorpusIndex, r.HasCorpus = v, true
			return s.first(fCorpusIndex) && ok
		case "cycle":
			v, ok := p.uint()
			r.Cycle = v
			return s.first(fCycle) && ok
		case "trace_entry":
			te := &contract.TraceEntry{}
			var ts seen
			ok := p.object(func(k []byte) bool {
				switch string(k) {
				case "entry":
					v, ok := p.uint()
					te.Entry = v
					return ts.first(0) && ok && v <= maxTraceEntry
				case "parent":
					v, has, ok := p.optUint()
					if has {
						te.Parent = &v
					}
					return ts.first(1) && ok && v <= maxTraceEntry
				case "turn":
					v, ok := p.uint()
					te.Turn = v
					return ts.first(2) && ok && v >= 1 && v <= maxTraceEntry+1
				case "parents":
					ok := p.array(int(recordLimits.traceParentsMax), func() bool {
						v, ok := p.uint()
						te.Parents = append(te.Parents, v)
						return ok && v <= maxTraceEntry
					})
					return ts.first(3) && ok && int64(len(te.Parents)) >= recordLimits.traceParentsMin
				}
				return false
			})
			r.Trace = te
			return s.first(fTraceEntry) && ok && ts&7 == 7
		case "tool_calls":
			ok := p.array(int(recordLimits.toolCallsMax), func() bool {
				var ts seen
				var call contract.ToolCall
				ok := p.object(func(k []byte) bool {
					switch string(k) {
					case "index":
						v, ok := p.uint()
						call.Index = v
						return ts.first(0) && ok && v <= recordLimits.toolIndexMax
					case "id":
						v, ok := p.str()
						call.ID = string(v)
						return ts.first(1) && ok && int64(len(v)) <= recordLimits.toolIDMax
					case "name":
						v, ok := p.str()
						call.Name = string(v)
						return ts.first(2) && ok && int64(len(v)) <= recordLimits.toolNameMax
					case "arguments_digest":
						v, ok := p.str()
						call.ArgumentsDigest = string(v)
						return ts.first(3) && ok && IsDigest(v)
					case "arguments_bytes":
						v, ok := p.uint()
						call.ArgumentsBytes = v
						return ts.first(4) && ok
					case "valid":
						v, ok := p.boolean()
						if v {
							r.ToolCallsValid++
						}
						call.Valid = v
						return ts.first(5) && ok
					}
					return false // arguments (JSON text, escaped) are the slow path's
				})
				r.ToolCalls++
				r.Calls = append(r.Calls, call)
				return ok && ts == 63
			})
			return s.first(fToolCalls) && ok
		case "seed":
			v, has, ok := p.optUint()
			r.Seed, r.HasSeed = v, has
			return s.first(fSeed) && ok && v <= maxSafeInteger
		case "body_digest":
			v, ok := p.str()
			return s.first(fBodyDigest) && ok && IsDigest(v) && decodeDigest(&r.BodyDigest, v)
		case "t_sched_ns":
			v, ok := p.uint()
			r.Sched = v
			return s.first(fTSched) && ok
		case "t_send_ns":
			v, has, ok := p.optUint()
			r.Send, r.HasSend = v, has
			return s.first(fTSend) && ok
		case "t_sent_ns":
			v, ok := p.uint()
			r.Sent, r.HasSent = v, true
			return s.first(fTSent) && ok
		case "t_hdr_ns":
			v, has, ok := p.optUint()
			r.Header, r.HasHdr = v, has
			return s.first(fTHdr) && ok
		case "t_end_ns":
			v, has, ok := p.optUint()
			r.End, r.HasEnd = v, has
			return s.first(fTEnd) && ok
		case "t_close_ns":
			v, has, ok := p.optUint()
			r.Close, r.HasClose = v, has
			return s.first(fTClose) && ok
		case "events":
			if p.st != nil && r.Content == nil {
				r.Content = p.st.content()
			}
			ok := p.array(int(recordLimits.eventsMax), func() bool {
				var es seen
				var t int64
				var kind contract.EventKind
				ok := p.object(func(k []byte) bool {
					switch string(k) {
					case "t_ns":
						v, ok := p.uint()
						t = v
						return es.first(0) && ok
					case "kind":
						v, ok := p.str()
						kind = contract.EventKind(v)
						return es.first(1) && ok && kind.Valid()
					case "bytes":
						_, ok := p.uint()
						return es.first(2) && ok
					}
					return false
				})
				if !ok || es != 7 || t < lastT {
					return false
				}
				lastT = t
				r.addEvent(kind, t)
				return true
			})
			return s.first(fEvents) && ok
		case "status_code":
			v, has, ok := p.optUint()
			r.Status, r.HasStatus = v, has
			return s.first(fStatus) && ok && (!has || v >= recordLimits.statusMin && v <= recordLimits.statusMax)
		case "usage": // not a contract value: the record's member name
			if !s.first(fUsage) {
				return false
			}
			if p.null() {
				return true
			}
			var us seen
			ok := p.object(func(k []byte) bool {
				v, ok := p.uint()
				switch string(k) {
				case "prompt_tokens":
					r.PromptTokens = v
					return us.first(0) && ok
				case "completion_tokens":
					r.CompletionTokens = v
					return us.first(1) && ok
				case "total_tokens":
					total = v
					return us.first(2) && ok
				}
				return false
			})
			r.HasUsage = true
			return ok && us == 7
		case "finish_reason": // not a contract value: the record's member name
			if !s.first(fFinish) {
				return false
			}
			if p.null() {
				return true
			}
			v, ok := p.str()
			return ok && contract.RecordFinishReason(v).Valid()
		case "output_digest":
			if !s.first(fOutput) {
				return false
			}
			if p.null() {
				return true
			}
			v, ok := p.str()
			r.Output = string(v)
			return ok && IsDigest(v)
		case "assertions":
			var kinds [maxKindBytes]byte
			n := 0
			ok := p.array(int(recordLimits.assertionsMax), func() bool {
				var as seen
				ok := p.object(func(k []byte) bool {
					switch string(k) {
					case "kind":
						v, ok := p.str()
						j := assertionKindIndex(v)
						if j < 0 || n == len(kinds) {
							return false
						}
						kinds[n] = byte(j)
						n++
						return as.first(0) && ok
					case "passed": // not a contract value: the assertion's member name
						v, ok := p.boolean()
						if !v {
							r.AssertFail++
						}
						return as.first(1) && ok
					case "detail":
						if !as.first(2) {
							return false
						}
						if p.null() {
							return true
						}
						v, ok := p.str()
						return ok && int64(len(v)) <= recordLimits.detailMax
					}
					return false
				})
				return ok && as == 7
			})
			r.Assertions = string(kinds[:n])
			return s.first(fAssertions) && ok
		case "error":
			if !s.first(fError) {
				return false
			}
			if p.null() {
				return true
			}
			var es seen
			ok := p.object(func(k []byte) bool {
				v, ok := p.str()
				switch string(k) {
				case "class":
					r.ErrClass = string(v)
					return es.first(0) && ok && contract.ErrorClass(v).Valid()
				case "message":
					return es.first(1) && ok && int64(len(v)) >= recordLimits.messageMin && int64(len(v)) <= recordLimits.messageMax
				}
				return false
			})
			r.Failed = true
			return ok && es == 3
		}
		return false
	})
	if !ok || s&(1<<fAll-1) != 1<<fAll-1 {
		return false
	}
	// The semantic rules of the contract (schemas.CheckSemantics).
	if r.HasUsage && total != r.PromptTokens+r.CompletionTokens {
		return false
	}
	if r.HasSend && r.Send < r.Sched {
		return false
	}
	if r.HasSent && (!r.HasSend || r.Sent < r.Send) {
		return false
	}
	if !r.Failed && (!r.HasUsage || !r.HasSend || !r.HasEnd) {
		return false
	}
	return true
}

// Itoa is strconv.Itoa for int64 (messages).
func Itoa(v int64) string { return strconv.FormatInt(v, 10) }
