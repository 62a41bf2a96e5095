package exitcode

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, OK},
		{fmt.Errorf("check x: %w", ErrRejected), Rejected},
		{fmt.Errorf("%w: no FILE", ErrUsage), Usage},
		{fmt.Errorf("stop: %w", ErrInterrupted), Interrupted},
		{errors.New("disk on fire"), Internal},
	} {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestTableMatchesDocs keeps docs/exit-codes.md equal to Table.
func TestTableMatchesDocs(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| code") {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(Table) {
		t.Fatalf("docs/exit-codes.md has %d rows, Table has %d", len(rows), len(Table))
	}
	for i, row := range Table {
		want := fmt.Sprintf("| %d | %s |", row.Code, row.Meaning)
		if rows[i] != want {
			t.Errorf("docs/exit-codes.md row %d:\n got %s\nwant %s", i, rows[i], want)
		}
	}
}

// TestRetryMatchesFleetDocs keeps the retry table of docs/fleet.md equal to Table's Retry column.
func TestRetryMatchesFleetDocs(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "| exit code | retried |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "| "):
			rows = append(rows, line)
		case in:
			in = false
		}
	}
	var want []string
	for _, row := range Table {
		if row.Code == OK {
			continue
		}
		r := "no: the row fails"
		if row.Retry {
			r = "yes: requeued (Slurm), counted against backoffLimitPerIndex (Kubernetes)"
		}
		want = append(want, fmt.Sprintf("| %d | %s |", row.Code, r))
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/fleet.md retry table:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
