package gitobj

import (
	"bytes"
	"compress/zlib"
	"os"
	"path/filepath"
	"testing"
)

// FuzzApplyDelta: a pack's deltas are untrusted input (the evidence root's .git). Applying one
// never panics and never yields more than the size it declares, or other than it.
func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("hello world"), []byte{11, 5, 0x91, 0, 5})                   // copy 5 bytes from 0
	f.Add([]byte("abc"), []byte{3, 4, 0x90, 3, 1, 'd'})                       // copy 3 (0x90: size byte), insert "d"
	f.Add([]byte(""), []byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1}) // a huge declared size
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		out, err := applyDelta(base, delta)
		if err != nil {
			return
		}
		_, rest, _ := deltaVarint(delta)
		want, _, _ := deltaVarint(rest)
		if int64(len(out)) != want {
			t.Fatalf("result of %d bytes, the delta declares %d", len(out), want)
		}
	})
}

// FuzzParseGitTree: tree objects are untrusted input. Parsing never panics; every entry it
// returns has a mode, a clean single-component name and a 40-hex object id.
func FuzzParseGitTree(f *testing.F) {
	f.Add([]byte("100644 a.txt\x00" + string(bytes.Repeat([]byte{0xab}, 20)) + "40000 dir\x00" + string(bytes.Repeat([]byte{1}, 20))))
	f.Add([]byte("100644 ../x\x00" + string(make([]byte, 20))))
	f.Fuzz(func(t *testing.T, data []byte) {
		ents, err := parseGitTree(data)
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.name == "" || e.name == "." || e.name == ".." || bytes.ContainsAny([]byte(e.name), "/\x00") || !ObjectName.MatchString(e.id) {
				t.Fatalf("entry %+v accepted", e)
			}
		}
	})
}

// FuzzReadLoose: loose objects are untrusted input: zlib streams with a "type size NUL" header.
// Reading one never panics, and a returned object has exactly its declared size.
func FuzzReadLoose(f *testing.F) {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write([]byte("blob 5\x00hello"))
	zw.Close()
	f.Add(b.Bytes())
	f.Add([]byte("not zlib"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "obj")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		typ, content, err := readLoose(fh)
		if err == nil && (typ == "" || len(content) > maxGitObjectBytes) {
			t.Fatalf("object %q of %d bytes accepted", typ, len(content))
		}
	})
}
