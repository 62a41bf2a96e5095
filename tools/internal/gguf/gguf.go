package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Version is the GGUF version this package writes and reads.
const Version = 3

// DefaultAlignment is the tensor data alignment when general.alignment is not set.
const DefaultAlignment = 32

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// TensorTypeF32 is ggml's element type of 32-bit floats, the only one Write produces.
const TensorTypeF32 = 0

// KV is one metadata pair. Value is one of uint8, int8, uint16, int16, uint32, int32, float32,
// bool, string, uint64, int64, float64, or a slice of one of those (a GGUF array).
type KV struct {
	Key   string
	Value any
}

// Tensor is one F32 tensor to write. Dims are innermost first (ggml's ne0, ne1, ...), and
// len(Data) is their product.
type Tensor struct {
	Name string
	Dims []uint64
	Data []float32
}

// File is a GGUF file to write: its metadata in order, then its tensors in order.
type File struct {
	Metadata []KV
	Tensors  []Tensor
}

// Alignment is the file's general.alignment (a uint32), or DefaultAlignment.
func (f *File) Alignment() (uint64, error) {
	for _, kv := range f.Metadata {
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return 0, fmt.Errorf("general.alignment must be a uint32 power of two, got %T %v", kv.Value, kv.Value)
			}
			return uint64(a), nil
		}
	}
	return DefaultAlignment, nil
}

// ErrInvalid marks a File that cannot be written as GGUF.
var ErrInvalid = errors.New("invalid gguf file")

// Write encodes f as GGUF version 3 and returns the number of bytes written. The same File always
// gives the same bytes.
func Write(w io.Writer, f *File) (int64, error) {
	align, err := f.Alignment()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for i, t := range f.Tensors {
		if len(t.Dims) == 0 || len(t.Dims) > MaxDims {
			return 0, fmt.Errorf("%w: tensor %d (%s) has %d dimensions, want 1 to %d", ErrInvalid, i, t.Name, len(t.Dims), MaxDims)
		}
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		if n != uint64(len(t.Data)) {
			return 0, fmt.Errorf("%w: tensor %d (%s): dimensions %v hold %d values, data has %d", ErrInvalid, i, t.Name, t.Dims, n, len(t.Data))
		}
	}
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.bytes([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(f.Metadata)))
	for _, kv := range f.Metadata {
		e.str(kv.Key)
		e.value(kv.Key, kv.Value)
	}
	var off uint64
	for _, t := range f.Tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(TensorTypeF32)
		e.u64(off)
		off += padded(uint64(len(t.Data))*4, align)
	}
	e.pad(align)
	for _, t := range f.Tensors {
		for _, v := range t.Data {
			e.u32(math.Float32bits(v))
		}
		e.pad(align)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.n, e.err
}

func padded(n, align uint64) uint64 { return (n + align - 1) / align * align }

type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	var k int
	k, e.err = e.w.Write(b)
	e.n += int64(k)
}

func (e *encoder) u8(v uint8) { e.bytes([]byte{v}) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:2], v)
	e.bytes(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		var k int
		k, e.err = e.w.WriteString(s)
		e.n += int64(k)
	}
}

func (e *encoder) pad(align uint64) {
	for uint64(e.n)%align != 0 && e.err == nil {
		e.u8(0)
	}
}

// value writes the type tag and the value of one metadata pair.
func (e *encoder) value(key string, v any) {
	if t, ok := scalarType(v); ok {
		e.u32(uint32(t))
		e.scalar(v)
		return
	}
	var elems []any
	var t ValueType
	switch a := v.(type) {
	case []string:
		t, elems = TypeString, anySlice(a)
	case []float32:
		t, elems = TypeFloat32, anySlice(a)
	case []int32:
		t, elems = TypeInt32, anySlice(a)
	case []uint32:
		t, elems = TypeUint32, anySlice(a)
	case []uint8:
		t, elems = TypeUint8, anySlice(a)
	case []int64:
		t, elems = TypeInt64, anySlice(a)
	case []uint64:
		t, elems = TypeUint64, anySlice(a)
	case []float64:
		t, elems = TypeFloat64, anySlice(a)
	case []bool:
		t, elems = TypeBool, anySlice(a)
	default:
		if e.err == nil {
			e.err = fmt.Errorf("%w: metadata %s: unsupported value type %T", ErrInvalid, key, v)
		}
		return
	}
	e.u32(uint32(TypeArray))
	e.u32(uint32(t))
	e.u64(uint64(len(elems)))
	for _, x := range elems {
		e.scalar(x)
	}
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func scalarType(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, true
	case int8:
		return TypeInt8, true
	case uint16:
		return TypeUint16, true
	case int16:
		return TypeInt16, true
	case uint32:
		return TypeUint32, true
	case int32:
		return TypeInt32, true
	case float32:
		return TypeFloat32, true
	case bool:
		return TypeBool, true
	case string:
		return TypeString, true
	case uint64:
		return TypeUint64, true
	case int64:
		return TypeInt64, true
	case float64:
		return TypeFloat64, true
	}
	return 0, false
}

func (e *encoder) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		b := uint8(0)
		if x {
			b = 1
		}
		e.u8(b)
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	}
}
