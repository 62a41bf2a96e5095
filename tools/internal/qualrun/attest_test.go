package qualrun

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// TestAttestErrorExitCodes: refusals of the evidence exit 1 (and are printed here, since Main does
// not print rejections), key and path problems exit 2, anything else 3.
func TestAttestErrorExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err     error
		want    int
		printed bool
	}{
		{attest.ErrReceipt, exitcode.Rejected, true},
		{fmt.Errorf("artifacts[3]: %w: x: %w", attest.ErrSubject, fs.ErrNotExist), exitcode.Rejected, true},
		{attest.ErrPath, exitcode.Usage, false},
		{fmt.Errorf("read receipt r.json: %w", fs.ErrNotExist), exitcode.Usage, false},
		{attest.ErrEd25519, exitcode.Usage, false},
		{attest.ErrKeyType, exitcode.Usage, false},
		{attest.ErrKeyFormat, exitcode.Usage, false},
		{attest.ErrPassword, exitcode.Usage, false},
		{attest.ErrNoPassword, exitcode.Usage, false},
		{attest.ErrEmptyPassword, exitcode.Usage, false},
		{errors.New("disk full"), exitcode.Internal, false},
	} {
		var stderr bytes.Buffer
		got := attestError(fmt.Errorf("wrapped: %w", tc.err), &stderr)
		if code := exitcode.Code(got); code != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.err, code, tc.want)
		}
		if printed := stderr.Len() > 0; printed != tc.printed {
			t.Errorf("%v: printed %q, want printed=%v", tc.err, stderr.String(), tc.printed)
		}
	}
}

func TestKeygenAndAttestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keygen"}, "keygen needs --output-prefix"},
		{[]string{"keygen", "extra", "--output-prefix", "x"}, "keygen takes no arguments"},
		{[]string{"attest", "r.json"}, "attest needs --key"},
		{[]string{"attest", "--key", "k"}, "attest needs exactly one RECEIPT"},
		{[]string{"attest", "r.json", "--key", "/nonexistent/k.key"}, "--key: read key /nonexistent/k.key"},
	} {
		code, _, stderr := runMain(tc.args...)
		if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
			t.Errorf("qualrun %v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
