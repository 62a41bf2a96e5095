package load

import (
	"runtime"
	"testing"
)

func TestAddProcs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	a := addProcs(2)
	b := addProcs(1)
	if got := runtime.GOMAXPROCS(0); got != base+3 {
		t.Fatalf("GOMAXPROCS %d, want %d", got, base+3)
	}
	a()
	a() // idempotent
	if got := runtime.GOMAXPROCS(0); got != base+1 {
		t.Fatalf("GOMAXPROCS %d, want %d", got, base+1)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("GOMAXPROCS %d, want %d back", got, base)
	}
	c, err := NewClient("http://127.0.0.1:1", WithReactors(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != base+2 {
		t.Fatalf("with two reactors GOMAXPROCS %d, want %d", got, base+2)
	}
	c.Close()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("after Close GOMAXPROCS %d, want %d", got, base)
	}
}
