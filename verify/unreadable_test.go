package verify

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnreadableEvidenceIsAFinding: evidence that cannot be read safely is refused at once, as a
// finding (a rejection, exit 1), never a hang, an unbounded read, an internal error or a crash.
// Built from the frozen a-1 campaign, resealed with a test key; each row replaces one file.
func TestUnreadableEvidenceIsAFinding(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	const caseResult = "cases/001-tool-present-r000/case-result.json"
	const rows = "cases/000-chat-stream-r000/rows/c0001-r000.jsonl"
	mkfifo := func(t *testing.T, p string) {
		t.Helper()
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	sparse := func(t *testing.T, p string, size int64) {
		t.Helper()
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Skipf("truncate to %d bytes: %v", size, err)
		}
	}
	// moveAndLink moves rel to elsewhere (below root) and puts a relative symlink in its place.
	moveAndLink := func(t *testing.T, root, rel, elsewhere string) {
		t.Helper()
		src, dst := filepath.Join(root, rel), filepath.Join(root, elsewhere)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(src, dst); err != nil {
			t.Fatal(err)
		}
		target, err := filepath.Rel(filepath.Dir(src), dst)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, src); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		tamper func(t *testing.T, root, run string)
		check  Check
		reason *Reason
		also   string
	}{
		{"FIFO receipt", func(t *testing.T, root, run string) {
			mkfifo(t, filepath.Join(root, receipt))
		}, CheckSchemas, ErrUnreadableFile, "a FIFO"},
		{"FIFO evidence file", func(t *testing.T, root, run string) {
			mkfifo(t, filepath.Join(root, run, caseResult))
		}, CheckHashes, ErrUnreadableFile, "a FIFO"},
		{"FIFO request records", func(t *testing.T, root, run string) {
			mkfifo(t, filepath.Join(root, run, rows))
		}, CheckHashes, ErrUnreadableFile, "a FIFO"},
		{"8 GiB sparse receipt", func(t *testing.T, root, run string) {
			sparse(t, filepath.Join(root, receipt), 8<<30)
		}, CheckSchemas, ErrUnreadableFile, "larger than the limit"},
		{"8 GiB sparse rows", func(t *testing.T, root, run string) {
			sparse(t, filepath.Join(root, run, rows), 8<<30)
		}, CheckHashes, ErrUnreadableFile, "larger than the limit"},
		{"1 GiB sparse rows", func(t *testing.T, root, run string) {
			// Within MaxRecordsFileBytes, but not the size the receipt binds: not read at all.
			sparse(t, filepath.Join(root, run, rows), 1<<30)
		}, CheckHashes, ErrSizeMismatch, "1073741824 bytes"},
		{"symlinked receipt", func(t *testing.T, root, run string) {
			moveAndLink(t, root, receipt, "elsewhere/a-1.json")
		}, CheckSchemas, ErrUnreadableFile, "symbolic link"},
		{"relative symlink inside the root", func(t *testing.T, root, run string) {
			// An identical file, reached through a link: the bytes match, the path does not.
			moveAndLink(t, root, filepath.Join(run, caseResult), "copies/case-result.json")
		}, CheckHashes, ErrUnreadableFile, "symbolic link"},
		{"symlinked directory", func(t *testing.T, root, run string) {
			moveAndLink(t, root, filepath.Join(run, "cases/001-tool-present-r000"), "copies/001")
		}, CheckHashes, ErrUnreadableFile, "symbolic link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			k := newTestKey(t)
			reseal(t, root, receipt, k)
			if res := verifyAt(t, root, receipt, k.policy()); res.Verdict != Verified {
				t.Fatalf("resealed evidence does not verify before the change:%s", findingsOf(res))
			}
			run := runDirOf(t, root, receipt)
			tc.tamper(t, root, run)
			var res *Result
			elapsed, alloc := measure(func() {
				done := make(chan *Result, 1)
				go func() { done <- verifyAt(t, root, receipt, k.policy()) }()
				select {
				case res = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("verification blocked")
				}
			})
			if res.Verdict != Rejected {
				t.Fatalf("verified")
			}
			found := false
			for _, f := range res.Check(tc.check).Findings {
				found = found || (errors.Is(f, tc.reason) && strings.Contains(f.Error(), tc.also))
			}
			if !found {
				t.Fatalf("no %s finding of %s mentioning %q:%s", tc.reason.Code(), tc.check, tc.also, findingsOf(res))
			}
			// The refusal is bounded: under 1 s and 64 MiB of allocation for the whole verification.
			if elapsed > time.Second || alloc > 64<<20 {
				t.Errorf("refusal took %v and allocated %d MiB, want under 1 s and 64 MiB", elapsed, alloc>>20)
			}
			t.Logf("%s: %s in %v, %d KiB allocated", tc.check, tc.reason.Code(), elapsed.Round(time.Millisecond), alloc>>10)
		})
	}
}

// measure runs f and returns its wall time and the bytes the process allocated meanwhile.
func measure(f func()) (time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return elapsed, after.TotalAlloc - before.TotalAlloc
}
