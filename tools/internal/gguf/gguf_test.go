package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/tools/internal/gguf"
)

func sample() *gguf.File {
	return &gguf.File{
		Metadata: []gguf.KV{
			{Key: "general.architecture", Value: "llama"},
			{Key: "general.alignment", Value: uint32(64)},
			{Key: "u8", Value: uint8(7)},
			{Key: "i8", Value: int8(-7)},
			{Key: "u16", Value: uint16(65535)},
			{Key: "i16", Value: int16(-300)},
			{Key: "i32", Value: int32(-5)},
			{Key: "f32", Value: float32(1e-5)},
			{Key: "yes", Value: true},
			{Key: "no", Value: false},
			{Key: "u64", Value: uint64(1) << 40},
			{Key: "i64", Value: int64(-1) << 40},
			{Key: "f64", Value: math.Pi},
			{Key: "tokens", Value: []string{"<unk>", "▁the", ""}},
			{Key: "scores", Value: []float32{0, -1, 2.5}},
			{Key: "types", Value: []int32{2, 1, 1}},
			{Key: "flags", Value: []bool{true, false}},
		},
		Tensors: []gguf.Tensor{
			{Name: "a", Dims: []uint64{3}, Data: []float32{1, 2, 3}},
			{Name: "b", Dims: []uint64{2, 2}, Data: []float32{-1, 0, 1, 2}},
			{Name: "c", Dims: []uint64{1, 1, 1, 1}, Data: []float32{42}},
		},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	f := sample()
	var buf bytes.Buffer
	n, err := gguf.Write(&buf, f)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("Write reported %d bytes, wrote %d", n, buf.Len())
	}
	h, err := gguf.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 3 || h.Alignment != 64 {
		t.Errorf("version %d alignment %d, want 3 and 64", h.Version, h.Alignment)
	}
	if !reflect.DeepEqual(h.Metadata, f.Metadata) {
		t.Errorf("metadata read back differs:\n got %#v\nwant %#v", h.Metadata, f.Metadata)
	}
	if h.DataOffset%64 != 0 {
		t.Errorf("data offset %d is not aligned to 64", h.DataOffset)
	}
	// Each tensor's bytes sit at DataOffset+Offset, padded to the alignment.
	wantOff := []uint64{0, 64, 128}
	for i, ti := range h.Tensors {
		want := f.Tensors[i]
		if ti.Name != want.Name || !reflect.DeepEqual(ti.Dims, want.Dims) || ti.Type != gguf.TensorTypeF32 || ti.Offset != wantOff[i] {
			t.Errorf("tensor %d: got %+v, want %s %v F32 at %d", i, ti, want.Name, want.Dims, wantOff[i])
			continue
		}
		at := h.DataOffset + int64(ti.Offset)
		for j, v := range want.Data {
			got := math.Float32frombits(binary.LittleEndian.Uint32(buf.Bytes()[at+int64(4*j):]))
			if got != v {
				t.Errorf("tensor %s value %d: %v, want %v", ti.Name, j, got, v)
			}
		}
	}
	if want := h.DataOffset + 128 + 64; int64(buf.Len()) != want {
		t.Errorf("file is %d bytes, want %d (data padded to the alignment)", buf.Len(), want)
	}
	if v, ok := h.Lookup("general.architecture"); !ok || v != "llama" {
		t.Errorf("Lookup(general.architecture) = %v, %v", v, ok)
	}
	if _, ok := h.Lookup("absent"); ok {
		t.Error("Lookup(absent) found something")
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if _, err := gguf.Write(&a, sample()); err != nil {
		t.Fatal(err)
	}
	if _, err := gguf.Write(&b, sample()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same File differ")
	}
	if !bytes.HasPrefix(a.Bytes(), []byte("GGUF\x03\x00\x00\x00")) {
		t.Fatalf("file starts with %q, want the magic and version 3", a.Bytes()[:8])
	}
}

func TestWriteRefusesInvalidFiles(t *testing.T) {
	for name, f := range map[string]*gguf.File{
		"data does not fill dims": {Tensors: []gguf.Tensor{{Name: "x", Dims: []uint64{2, 2}, Data: []float32{1}}}},
		"no dims":                 {Tensors: []gguf.Tensor{{Name: "x", Data: []float32{}}}},
		"five dims":               {Tensors: []gguf.Tensor{{Name: "x", Dims: []uint64{1, 1, 1, 1, 1}, Data: []float32{1}}}},
		"bad alignment":           {Metadata: []gguf.KV{{Key: "general.alignment", Value: uint32(24)}}},
		"alignment not uint32":    {Metadata: []gguf.KV{{Key: "general.alignment", Value: 32}}},
		"unsupported value":       {Metadata: []gguf.KV{{Key: "x", Value: []int{1}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := gguf.Write(&bytes.Buffer{}, f)
			if !errors.Is(err, gguf.ErrInvalid) {
				t.Fatalf("Write: %v, want ErrInvalid", err)
			}
		})
	}
}

// header builds the start of a GGUF file by hand: magic, version, counts.
func header(version uint32, tensors, kvs uint64) []byte {
	b := []byte("GGUF")
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, tensors)
	return binary.LittleEndian.AppendUint64(b, kvs)
}

func str(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func TestReadRefusesBadInput(t *testing.T) {
	valid := func() []byte {
		var buf bytes.Buffer
		if _, err := gguf.Write(&buf, sample()); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}()
	kv := func(key string, typ uint32, payload ...byte) []byte {
		b := str(header(3, 0, 1), key)
		b = binary.LittleEndian.AppendUint32(b, typ)
		return append(b, payload...)
	}
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"empty", "unexpected end of file", nil},
		{"wrong magic", `magic "GGML"`, append([]byte("GGML"), valid[4:]...)},
		{"version 2", "version 2", header(2, 0, 0)},
		{"truncated header", "unexpected end of file", valid[:40]},
		{"too many tensors", "MaxTensors", header(3, gguf.MaxTensors+1, 0)},
		{"too many pairs", "MaxMetadata", header(3, 0, gguf.MaxMetadata+1)},
		{"huge string", "MaxStringBytes", binary.LittleEndian.AppendUint64(header(3, 0, 1), gguf.MaxStringBytes+1)},
		{"huge array", "MaxArrayLen", kv("a", 9, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 4), gguf.MaxArrayLen+1)...)},
		{"array claims more than present", "unexpected end of file", kv("a", 9, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 4), 1000)...)},
		{"nested array", "arrays of arrays", kv("a", 9, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 9), 1)...)},
		{"unknown type", "unknown value type 13", kv("a", 13)},
		{"bad bool", "neither 0 nor 1", kv("a", 7, 2)},
		{"bad alignment", "power of two", kv("general.alignment", 4, 3, 0, 0, 0)},
		{"tensor with 5 dims", "5 dimensions", binary.LittleEndian.AppendUint32(str(header(3, 1, 0), "t"), 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gguf.Read(bytes.NewReader(tc.data))
			if !errors.Is(err, gguf.ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want ErrFormat mentioning %q", err, tc.want)
			}
		})
	}
}

func TestReadRefusesDuplicateKeys(t *testing.T) {
	b := header(3, 0, 2)
	for range 2 {
		b = str(b, "k")
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = append(b, 1)
	}
	_, err := gguf.Read(bytes.NewReader(b))
	if !errors.Is(err, gguf.ErrFormat) || !strings.Contains(err.Error(), `duplicate key "k"`) {
		t.Fatalf("Read: %v, want a duplicate key error", err)
	}
}

func TestReadRefusesMisalignedTensor(t *testing.T) {
	b := str(header(3, 1, 0), "t")
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 4)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 16)
	_, err := gguf.Read(bytes.NewReader(b))
	if !errors.Is(err, gguf.ErrFormat) || !strings.Contains(err.Error(), "not a multiple of the alignment 32") {
		t.Fatalf("Read: %v, want a misalignment error", err)
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	if _, err := gguf.Write(&buf, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(header(3, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := gguf.Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, gguf.ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		if h.DataOffset > int64(len(data))+int64(h.Alignment) {
			t.Fatalf("data offset %d beyond the input (%d bytes)", h.DataOffset, len(data))
		}
	})
}
