package telemetry

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// hwmonReader reads the sysfs hwmon counters of DRM cards (AMD and other vendors):
// power1_average (or power1_input) in µW, energy1_input in µJ, temp1_input in m°C, freq1_input and
// freq2_input (amdgpu's sclk and mclk) in Hz, and the card's gpu_busy_percent and
// mem_info_vram_used. A file that is absent is null; one that cannot be read is named in errors.
type hwmonReader struct {
	devs []hwmonDev
}

type hwmonDev struct {
	index       int64
	pci, hwmon  string
	unreachable string
}

// NewHwmonReader reads the cards at the given PCI slots (receipt device index -> slot such as
// "0000:03:00.0") under sys (normally /sys).
func NewHwmonReader(sys string, slots map[int64]string) Reader {
	r := &hwmonReader{}
	var idx []int64
	for i := range slots {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		pci := filepath.Join(sys, "bus", "pci", "devices", slots[i])
		d := hwmonDev{index: i, pci: pci}
		mons, _ := filepath.Glob(filepath.Join(pci, "hwmon", "hwmon*"))
		sort.Strings(mons)
		if len(mons) > 0 {
			d.hwmon = mons[0]
		} else {
			d.unreachable = "no hwmon directory under " + pci
		}
		r.devs = append(r.devs, d)
	}
	return r
}

func (r *hwmonReader) Close() {}

func (r *hwmonReader) Read(t int64, out []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc {
	for _, d := range r.devs {
		x := newSample(t, d.index, contract.SampleSourceHwmon)
		if d.unreachable != "" {
			x.Errors = append(x.Errors, d.unreachable)
			out = append(out, x)
			continue
		}
		num := func(dir, name string) (float64, bool) {
			b, err := evidence.ReadFileLimited(filepath.Join(dir, name), 4096)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) && len(x.Errors) < 16 {
					x.Errors = append(x.Errors, name+": "+firstLine(err.Error()))
				}
				return 0, false
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
			if err != nil || v < 0 {
				if len(x.Errors) < 16 {
					x.Errors = append(x.Errors, name+": not a non-negative number")
				}
				return 0, false
			}
			return v, true
		}
		if v, ok := num(d.hwmon, "power1_average"); ok {
			x.PowerW = ptr(v / 1e6)
		} else if v, ok := num(d.hwmon, "power1_input"); ok {
			x.PowerW = ptr(v / 1e6)
		}
		if v, ok := num(d.hwmon, "energy1_input"); ok {
			x.EnergyJ = ptr(v / 1e6)
		}
		if v, ok := num(d.hwmon, "temp1_input"); ok {
			x.TemperatureC = ptr(v / 1000)
		}
		if v, ok := num(d.hwmon, "freq1_input"); ok {
			x.SMClockMHz = ptr(int64(v / 1e6))
		}
		if v, ok := num(d.hwmon, "freq2_input"); ok {
			x.MemClockMHz = ptr(int64(v / 1e6))
		}
		if v, ok := num(d.pci, "gpu_busy_percent"); ok && v <= 100 {
			x.GPUUtilPct = ptr(int64(v))
		}
		if v, ok := num(d.pci, "mem_info_vram_used"); ok {
			x.MemoryUsedBytes = ptr(int64(v))
		}
		out = append(out, x)
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
