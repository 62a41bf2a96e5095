package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/wire"
)

// Tool calls (a serving case's tools, docs/metrics.md "Tool calls"): every chat request offers
// the functions of the case's tools file with its tool_choice; the client reassembles the
// streamed tool_calls deltas of a response (index, id, function name, argument fragments) into
// calls, bounded by MaxToolCalls and MaxToolArgumentBytes, and records each as its name and the
// digest of its arguments, judged valid when the name is an offered function and the arguments
// are one JSON document valid against that function's parameters schema.

// ErrTools marks a tools file that cannot be used.
var ErrTools = errors.New("invalid tools")

// Tools is a serving case's resolved tools.
type Tools struct {
	// wire is the file's array, compacted: the chat body's "tools".
	wire json.RawMessage
	// choice is the chat body's "tool_choice".
	choice any
	// fns are the offered functions with their parameters (wire.Functions, which the verifier
	// judges calls with too).
	fns *wire.Functions
}

// ResolveTools reads the case's tools file (repoRoot/t.path), checks its digest and parses it
// (ParseTools).
func ResolveTools(t contract.Tools, repoRoot string) (*Tools, error) {
	rel := t.Path
	if rel == "" || strings.Contains(rel, `\`) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("%w: path %q: want a repository-relative path that stays inside the repository", ErrTools, rel)
	}
	data, err := evidence.ReadFileLimited(filepath.Join(repoRoot, filepath.FromSlash(rel)), MaxToolsBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrTools, rel, err)
	}
	if got := evidence.DigestOf(data); got != t.Digest {
		return nil, fmt.Errorf("%w: %s has digest %s, the workload declares %s", ErrTools, rel, got, t.Digest)
	}
	tools, err := ParseTools(data, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return tools, nil
}

// ParseTools parses a tools file under the case's declaration t: a JSON array of 1 to MaxTools
// OpenAI function tools {"type":"function","function":{"name","description"?,"parameters"?}}
// with distinct names, each parameters a JSON Schema (draft 2020-12 unless it says otherwise)
// that compiles without loading anything; t.function must name one of them with choice
// function.
func ParseTools(data []byte, t contract.Tools) (*Tools, error) {
	if len(data) > MaxToolsBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTools, len(data), MaxToolsBytes)
	}
	fns, err := wire.ParseFunctions(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTools, err)
	}
	out := &Tools{fns: fns}
	switch t.Choice {
	case contract.ToolsChoiceAuto, contract.ToolsChoiceNone, contract.ToolsChoiceRequired:
		if t.Function != "" {
			return nil, fmt.Errorf("%w: function %s goes with choice function only, not %s", ErrTools, t.Function, t.Choice)
		}
	case contract.ToolsChoiceFunction:
		if !out.fns.Has(t.Function) {
			return nil, fmt.Errorf("%w: choice function names %q, which the tools file does not declare", ErrTools, t.Function)
		}
	}
	// What the body sends of them is package schemas/wire's, which the verifier renders too.
	offer, err := wire.OfferTools(data, t)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTools, err)
	}
	out.wire, out.choice = offer.Wire, offer.Choice
	return out, nil
}

// callSet collects the tool calls of one response as their deltas arrive.
type callSet struct {
	calls []*callAcc // in index order of first appearance
	bytes int        // argument bytes of every call
}

// callAcc is one call being reassembled.
type callAcc struct {
	index    int
	id, name []byte
	args     []byte
}

// at returns the call of index, adding it when new.
func (cs *callSet) at(index int) *callAcc {
	for _, c := range cs.calls {
		if c.index == index {
			return c
		}
	}
	c := &callAcc{index: index}
	cs.calls = append(cs.calls, c)
	return c
}

// toolCalls reads a delta's (or message's) tool_calls array into s.calls (when set; the value is
// only validated otherwise) and reports whether it held an element. An element is
// {"index"?, "id"?, "type"?, "function"?: {"name"?, "arguments"?}}: index places it (its position
// in the array when absent), id and name are set once (a repeat must be equal), and arguments
// fragments are appended in arrival order.
func (s *scanner) toolCalls() (bool, error) {
	if null, err := s.isNull(); null || err != nil {
		return false, err
	}
	if s.peek() != '[' {
		return false, s.fail("tool_calls is not an array")
	}
	pos := 0
	err := s.array(func() error {
		if s.calls == nil {
			pos++
			return s.skip()
		}
		err := s.toolCallDelta(pos)
		pos++
		return err
	})
	return pos > 0, err
}

// toolCallDelta reads one element of tool_calls (at position pos) into s.calls.
func (s *scanner) toolCallDelta(pos int) error {
	if s.peek() != '{' {
		return s.fail("tool_calls[%d] is not an object", pos)
	}
	var m seen
	index := pos
	var id, name, args []byte
	hasID, hasName := false, false
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "index":
			if err := m.once(s, 1, "index"); err != nil {
				return err
			}
			lit, err := s.number()
			if err != nil {
				return err
			}
			v, perr := strconv.Atoi(string(lit))
			if perr != nil || v < 0 || v >= MaxToolCalls {
				return s.fail("tool call index %.20s: want an integer from 0 to %d", lit, MaxToolCalls-1)
			}
			index = v
			return nil
		case "id":
			v, err := s.optString(&m, 2, "id", &hasID)
			id = v
			return err
		case "function":
			if err := m.once(s, 4, "function"); err != nil {
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			if s.peek() != '{' {
				return s.fail("tool call function is not an object")
			}
			var fm seen
			return s.object(func(k []byte) error {
				switch string(k) {
				case "name":
					v, err := s.optString(&fm, 1, "name", &hasName)
					name = v
					return err
				case "arguments":
					hasArgs := false
					v, err := s.optString(&fm, 2, "arguments", &hasArgs)
					args = v
					return err
				default:
					return s.skip()
				}
			})
		default:
			return s.skip()
		}
	})
	if err != nil {
		return err
	}
	if len(s.calls.calls) >= MaxToolCalls && !slices.ContainsFunc(s.calls.calls, func(c *callAcc) bool { return c.index == index }) {
		return s.fail("more than %d tool calls", MaxToolCalls)
	}
	c := s.calls.at(index)
	if hasID && len(id) > 0 {
		switch {
		case len(id) > MaxToolCallIDBytes:
			return s.fail("tool call %d: id longer than %d bytes", index, MaxToolCallIDBytes)
		case c.id != nil && !bytes.Equal(c.id, id):
			return s.fail("tool call %d: id %.64q after id %.64q", index, id, c.id)
		}
		c.id = id
	}
	if hasName && len(name) > 0 {
		switch {
		case len(name) > MaxToolCallIDBytes:
			return s.fail("tool call %d: function name longer than %d bytes", index, MaxToolCallIDBytes)
		case c.name != nil && !bytes.Equal(c.name, name):
			return s.fail("tool call %d: function name %.64q after %.64q", index, name, c.name)
		}
		c.name = name
	}
	if len(c.args)+len(args) > MaxToolArgumentBytes {
		return s.fail("tool call %d: arguments longer than %d bytes", index, MaxToolArgumentBytes)
	}
	c.args = append(c.args, args...)
	s.calls.bytes += len(args)
	return nil
}

// optString reads a member seen at most once (bit of m) that is a string or null; has reports a
// string.
func (s *scanner) optString(m *seen, bit seen, key string, has *bool) ([]byte, error) {
	if err := m.once(s, bit, key); err != nil {
		return nil, err
	}
	if null, err := s.isNull(); null || err != nil {
		return nil, err
	}
	if s.peek() != '"' {
		return nil, s.fail("tool call %s is not a string", key)
	}
	*has = true
	return s.str([]byte{})
}

// judgeCalls turns a response's reassembled calls into their record entries, in index order,
// each judged against the case's tools (nil: none offered, so no call is valid), and says why
// each invalid one is.
func judgeCalls(cs *callSet, t *Tools) ([]contract.ToolCall, []string) {
	if cs == nil || len(cs.calls) == 0 {
		return nil, nil
	}
	calls := slices.Clone(cs.calls)
	slices.SortFunc(calls, func(a, b *callAcc) int { return a.index - b.index })
	out := make([]contract.ToolCall, len(calls))
	why := make([]string, len(calls))
	for i, c := range calls {
		sum := sha256.Sum256(c.args)
		out[i] = contract.ToolCall{Index: int64(c.index), ID: clipRunes(string(c.id), 256), Name: clipRunes(string(c.name), 256),
			ArgumentsDigest: "sha256:" + hex.EncodeToString(sum[:]), ArgumentsBytes: int64(len(c.args))}
		if kept, ok := wire.KeptArguments(c.args); ok {
			out[i].Arguments = &kept
		}
		why[i] = t.invalid(string(c.name), c.args)
		out[i].Valid = why[i] == ""
	}
	return out, why
}

// invalid says why arguments are not a valid call of function name ("" when they are):
// wire.Functions.Invalid, nil tools offering none.
func (t *Tools) invalid(name string, args []byte) string {
	if t == nil {
		return "the case offers no tools"
	}
	return t.fns.Invalid(name, args)
}

// checkTools refuses a plan whose tools do not match its case (CheckCaseTools).
func (p *Plan) checkTools() error {
	if err := checkCaseTools(p.CaseID, &p.Case, p.Tools, p.isSessions()); err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	return nil
}

// CheckCaseTools refuses (with ErrTools) a serving case whose resolved tools t (nil when it
// declares none) do not match it: tools declared and not resolved (or the reverse), tools with an api other than
// chat, in a session case or with a bound tokenizer, a tool_call assertion naming a function the
// tools do not offer. Preflight calls it, so nothing is launched for such a case.
func CheckCaseTools(c contract.Case, t *Tools) error {
	return checkCaseTools(c.ID, &c, t, false)
}

func checkCaseTools(id string, c *contract.Case, t *Tools, sessions bool) error {
	sessions = sessions || c.RunsSessions()
	switch {
	case c.Tools != nil && t == nil:
		return fmt.Errorf("%w: case %s declares tools, but the plan has none (ResolveTools)", ErrTools, id)
	case c.Tools == nil && t != nil:
		return fmt.Errorf("%w: case %s declares no tools, but the plan has some", ErrTools, id)
	case c.Tools != nil && c.API != contract.ServingCaseAPIChat:
		return fmt.Errorf("%w: case %s: tools go with api chat only (qualkit reassembles chat tool_calls deltas, not the %s API's function calls)", ErrTools, id, c.API)
	case c.Tools != nil && sessions && c.Tools.Results == nil:
		return fmt.Errorf("%w: case %s: tools in a multi-turn session case without results: the client would not answer the tool calls, so a session's next turn would follow an unanswered call; declare tools.results (docs/caching.md \"Tool rounds\")", ErrTools, id)
	case c.Tools != nil && !sessions && c.Tools.Results != nil:
		return fmt.Errorf("%w: case %s: tools.results answer the calls of a multi-turn session's turn, and the case has no conversation corpus", ErrTools, id)
	case c.Tools != nil && c.Tokenizer != nil:
		return fmt.Errorf("%w: case %s: tools and a tokenizer: the server's prompt count includes the tool definitions its chat template renders, which the client cannot count; drop the tokenizer", ErrTools, id)
	}
	if err := checkToolResults(id, c, t); err != nil {
		return err
	}
	for i, a := range c.OutputAssertions {
		if contract.ResponseAssertionKind(a.Kind) != contract.ResponseAssertionKindToolCall {
			continue
		}
		if t == nil {
			return fmt.Errorf("%w: case %s: output assertion %d (tool_call %s) needs the case's tools", ErrTools, id, i, a.Function)
		}
		if !t.fns.Has(a.Function) {
			return fmt.Errorf("%w: case %s: output assertion %d requires a call to %q, which the tools do not offer", ErrTools, id, i, a.Function)
		}
	}
	return nil
}

// calledValid is the outcome of a tool_call assertion for function name: a call to it with valid
// arguments passes; the detail says what was called instead, or why the first call to it is
// invalid.
func calledValid(r *Response, name string) (bool, string) {
	var first string
	var names []string
	for i, c := range r.ToolCalls {
		if c.Name != name {
			names = append(names, c.Name)
			continue
		}
		if c.Valid {
			return true, ""
		}
		if first == "" {
			first = r.toolCallWhy[i]
		}
	}
	switch {
	case first != "":
		return false, first
	case len(names) == 0:
		return false, fmt.Sprintf("no tool call (want a call to %s)", name)
	}
	return false, fmt.Sprintf("no call to %s; called %s", name, clip(strings.Join(names, ", "), 200))
}
