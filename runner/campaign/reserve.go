package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"golang.org/x/sys/unix"
)

// ReservationsDir holds one reservation file per --output path of a run in progress. Preflight
// takes an exclusive lock (flock) on the output's reservation file and holds it until the run
// ends, so a second run with the same --output is refused at once, before anything launches,
// with the run directory of the run that holds it. The kernel drops the lock when its holder
// dies, so a stale file left by a killed qualrun never blocks a later run.
const ReservationsDir = ".qualification/reservations"

// maxReservationBytes bounds what is read of another run's reservation file.
const maxReservationBytes = 4 << 10

// reservation is the content of a reservation file: who holds the output path.
type reservation struct {
	Output    string `json:"output"`
	RunDir    string `json:"run_dir"`
	PID       int    `json:"pid"`
	StartedAt string `json:"started_at"`
}

// reservationPath is the reservation file of a repository-relative output path.
func reservationPath(outputRel string) string {
	h := sha256.Sum256([]byte(outputRel))
	return ReservationsDir + "/" + hex.EncodeToString(h[:16]) + ".json"
}

// reserve takes the output path for this run, or refuses naming the run that holds it.
func (p *Plan) reserve() error {
	rel := reservationPath(p.outputRel)
	if err := checkUnder(p.root, ReservationsDir); err != nil {
		return err
	}
	path := filepath.Join(p.root, rel)
	for range 8 {
		if err := os.MkdirAll(filepath.Join(p.root, ReservationsDir), 0o755); err != nil {
			return fmt.Errorf("%w: reserve --output %s: %v", ErrPath, p.outputRel, err)
		}
		if err := checkUnder(p.root, rel); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0o644)
		if errors.Is(err, os.ErrNotExist) {
			continue // another run's Release removed the empty directory meanwhile
		}
		if err != nil {
			return fmt.Errorf("%w: reserve --output %s: %v", ErrPath, p.outputRel, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			held := holder(f)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return fmt.Errorf("%w: --output %s is reserved by another run in progress%s; wait for it to finish or choose another --output", ErrPath, p.outputRel, held)
			}
			return fmt.Errorf("%w: reserve --output %s: lock %s: %v", ErrPath, p.outputRel, rel, err)
		}
		// The holder before us may have removed the file after we opened it: lock the file that
		// is at the path now.
		if !sameFile(f, path) {
			f.Close()
			continue
		}
		b, _ := json.Marshal(reservation{Output: p.outputRel, RunDir: p.runRel, PID: os.Getpid(), StartedAt: p.started.UTC().Format(time.RFC3339Nano)})
		// The content only names this run to another that is refused; the lock is the reservation.
		if f.Truncate(0) == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
		}
		p.reservation, p.reservationRel = f, rel
		// A run that finished between checkOutput and now has written the receipt.
		if _, err := os.Lstat(filepath.Join(p.root, p.outputRel)); err == nil {
			p.Release()
			return fmt.Errorf("%w: %s already exists; receipts are never replaced", ErrPath, p.outputRel)
		}
		return nil
	}
	return fmt.Errorf("%w: reserve --output %s: the reservation file %s keeps changing; try again", ErrPath, p.outputRel, rel)
}

// holder describes the run named in a locked reservation file ("" when unreadable).
func holder(f *os.File) string {
	buf := make([]byte, maxReservationBytes)
	n, _ := f.ReadAt(buf, 0)
	var r reservation
	if err := jsonstrict.DecodeInto(buf[:n], &r); err != nil || r.RunDir == "" {
		return ""
	}
	return fmt.Sprintf(" (run directory %s, qualrun pid %d, started %s)", r.RunDir, r.PID, r.StartedAt)
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// Release gives the --output reservation back, removing its file (and the reservations directory
// and .qualification when they are left empty, so a refused preflight leaves nothing behind); the
// run's receipt, if any, is written by then. It is idempotent; Run calls it when it returns.
func (p *Plan) Release() {
	if p == nil || p.reservation == nil {
		return
	}
	path := filepath.Join(p.root, p.reservationRel)
	if sameFile(p.reservation, path) {
		os.Remove(path)
	}
	p.reservation.Close()
	p.reservation = nil
	if os.Remove(filepath.Join(p.root, ReservationsDir)) == nil {
		os.Remove(filepath.Join(p.root, filepath.Dir(ReservationsDir))) // fails unless empty
	}
}
