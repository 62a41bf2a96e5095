package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// TensorInfo is one row of the tensor table.
type TensorInfo struct {
	Name string `json:"name"`
	// Dims are innermost first.
	Dims []uint64 `json:"dims"`
	// Type is ggml's element type (0 is F32).
	Type uint32 `json:"type"`
	// Offset is relative to the start of the tensor data, a multiple of the alignment.
	Offset uint64 `json:"offset"`
}

// Header is everything of a GGUF file but the tensor data.
type Header struct {
	Version   uint32
	Metadata  []KV
	Tensors   []TensorInfo
	Alignment uint64
	// DataOffset is where the tensor data starts: the header's size rounded up to the alignment.
	DataOffset int64
}

// Lookup returns the value of a metadata key.
func (h *Header) Lookup(key string) (any, bool) {
	for _, kv := range h.Metadata {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// ErrFormat marks input that is not a GGUF version 3 file or exceeds a limit.
var ErrFormat = errors.New("not a readable gguf v3 file")

// Read decodes the header, metadata and tensor table from r (positioned at the start of the
// file). It reads nothing past the tensor table.
func Read(r io.Reader) (*Header, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10)}
	h, err := d.header()
	if err != nil {
		return nil, fmt.Errorf("%w: at byte %d: %v", ErrFormat, d.n, err)
	}
	return h, nil
}

type decoder struct {
	r   *bufio.Reader
	n   int64
	buf [8]byte
}

func (d *decoder) read(p []byte) error {
	if d.n+int64(len(p)) > MaxHeaderBytes {
		return fmt.Errorf("header larger than %d bytes (MaxHeaderBytes)", MaxHeaderBytes)
	}
	k, err := io.ReadFull(d.r, p)
	d.n += int64(k)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of file")
	}
	return err
}

func (d *decoder) u8() (uint8, error) {
	err := d.read(d.buf[:1])
	return d.buf[0], err
}

func (d *decoder) u16() (uint16, error) {
	err := d.read(d.buf[:2])
	return binary.LittleEndian.Uint16(d.buf[:2]), err
}

func (d *decoder) u32() (uint32, error) {
	err := d.read(d.buf[:4])
	return binary.LittleEndian.Uint32(d.buf[:4]), err
}

func (d *decoder) u64() (uint64, error) {
	err := d.read(d.buf[:8])
	return binary.LittleEndian.Uint64(d.buf[:8]), err
}

func (d *decoder) str() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > MaxStringBytes {
		return "", fmt.Errorf("string of %d bytes exceeds %d (MaxStringBytes)", n, MaxStringBytes)
	}
	b := make([]byte, n)
	if err := d.read(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) header() (*Header, error) {
	var magic [4]byte
	if err := d.read(magic[:]); err != nil {
		return nil, err
	}
	if string(magic[:]) != Magic {
		return nil, fmt.Errorf("magic %q, want %q", magic[:], Magic)
	}
	h := &Header{Alignment: DefaultAlignment}
	var err error
	if h.Version, err = d.u32(); err != nil {
		return nil, err
	}
	if h.Version != Version {
		return nil, fmt.Errorf("version %d, only version %d is supported", h.Version, Version)
	}
	nt, err := d.u64()
	if err != nil {
		return nil, err
	}
	nkv, err := d.u64()
	if err != nil {
		return nil, err
	}
	if nt > MaxTensors {
		return nil, fmt.Errorf("%d tensors exceed %d (MaxTensors)", nt, MaxTensors)
	}
	if nkv > MaxMetadata {
		return nil, fmt.Errorf("%d metadata pairs exceed %d (MaxMetadata)", nkv, MaxMetadata)
	}
	seen := map[string]bool{}
	for i := uint64(0); i < nkv; i++ {
		key, err := d.str()
		if err != nil {
			return nil, fmt.Errorf("metadata %d: key: %w", i, err)
		}
		if key == "" || seen[key] {
			return nil, fmt.Errorf("metadata %d: empty or duplicate key %q", i, key)
		}
		seen[key] = true
		t, err := d.u32()
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", key, err)
		}
		v, err := d.value(ValueType(t))
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", key, err)
		}
		if key == "general.alignment" {
			a, ok := v.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return nil, fmt.Errorf("general.alignment must be a uint32 power of two, got %s %v", ValueType(t), v)
			}
			h.Alignment = uint64(a)
		}
		h.Metadata = append(h.Metadata, KV{Key: key, Value: v})
	}
	for i := uint64(0); i < nt; i++ {
		ti, err := d.tensor()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		if ti.Offset%h.Alignment != 0 {
			return nil, fmt.Errorf("tensor %s: offset %d is not a multiple of the alignment %d", ti.Name, ti.Offset, h.Alignment)
		}
		h.Tensors = append(h.Tensors, ti)
	}
	h.DataOffset = int64(padded(uint64(d.n), h.Alignment))
	return h, nil
}

func (d *decoder) tensor() (TensorInfo, error) {
	var ti TensorInfo
	var err error
	if ti.Name, err = d.str(); err != nil {
		return ti, err
	}
	nd, err := d.u32()
	if err != nil {
		return ti, err
	}
	if nd == 0 || nd > MaxDims {
		return ti, fmt.Errorf("%s: %d dimensions, want 1 to %d", ti.Name, nd, MaxDims)
	}
	for j := uint32(0); j < nd; j++ {
		v, err := d.u64()
		if err != nil {
			return ti, err
		}
		ti.Dims = append(ti.Dims, v)
	}
	if ti.Type, err = d.u32(); err != nil {
		return ti, err
	}
	ti.Offset, err = d.u64()
	return ti, err
}

// value reads one value of type t (an array's elements included).
func (d *decoder) value(t ValueType) (any, error) {
	if t != TypeArray {
		return d.scalar(t)
	}
	et, err := d.u32()
	if err != nil {
		return nil, err
	}
	n, err := d.u64()
	if err != nil {
		return nil, err
	}
	if n > MaxArrayLen {
		return nil, fmt.Errorf("array of %d elements exceeds %d (MaxArrayLen)", n, MaxArrayLen)
	}
	switch ValueType(et) {
	case TypeUint8:
		return readArray[uint8](d, ValueType(et), n)
	case TypeInt8:
		return readArray[int8](d, ValueType(et), n)
	case TypeUint16:
		return readArray[uint16](d, ValueType(et), n)
	case TypeInt16:
		return readArray[int16](d, ValueType(et), n)
	case TypeUint32:
		return readArray[uint32](d, ValueType(et), n)
	case TypeInt32:
		return readArray[int32](d, ValueType(et), n)
	case TypeFloat32:
		return readArray[float32](d, ValueType(et), n)
	case TypeBool:
		return readArray[bool](d, ValueType(et), n)
	case TypeString:
		return readArray[string](d, ValueType(et), n)
	case TypeUint64:
		return readArray[uint64](d, ValueType(et), n)
	case TypeInt64:
		return readArray[int64](d, ValueType(et), n)
	case TypeFloat64:
		return readArray[float64](d, ValueType(et), n)
	case TypeArray:
		return nil, errors.New("arrays of arrays are not supported")
	}
	return nil, fmt.Errorf("unknown array element type %d", et)
}

// readArray reads n elements, growing the slice as they arrive, so that a huge declared count
// costs memory only for the bytes actually present.
func readArray[T any](d *decoder, t ValueType, n uint64) ([]T, error) {
	out := make([]T, 0, min(n, 4096))
	for i := uint64(0); i < n; i++ {
		v, err := d.scalar(t)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out = append(out, v.(T))
	}
	return out, nil
}

func (d *decoder) scalar(t ValueType) (any, error) {
	switch t {
	case TypeUint8:
		return d.u8()
	case TypeInt8:
		v, err := d.u8()
		return int8(v), err
	case TypeUint16:
		return d.u16()
	case TypeInt16:
		v, err := d.u16()
		return int16(v), err
	case TypeUint32:
		return d.u32()
	case TypeInt32:
		v, err := d.u32()
		return int32(v), err
	case TypeFloat32:
		v, err := d.u32()
		return math.Float32frombits(v), err
	case TypeBool:
		v, err := d.u8()
		if err == nil && v > 1 {
			return nil, fmt.Errorf("bool byte %d is neither 0 nor 1", v)
		}
		return v == 1, err
	case TypeString:
		return d.str()
	case TypeUint64:
		return d.u64()
	case TypeInt64:
		v, err := d.u64()
		return int64(v), err
	case TypeFloat64:
		v, err := d.u64()
		return math.Float64frombits(v), err
	}
	return nil, fmt.Errorf("unknown value type %d", uint32(t))
}
