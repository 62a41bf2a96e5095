package device

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

var (
	cardName = regexp.MustCompile(`^card([0-9]{1,4})$`)
	pciHex4  = regexp.MustCompile(`^0x[0-9a-f]{4}$`)
	pciHex2  = regexp.MustCompile(`^0x[0-9a-f]{2}$`)
	safeName = regexp.MustCompile(`^[A-Za-z0-9_.+-]{1,128}$`)
	pciBus   = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}[.][0-7]$`)
)

// pciVendors names the PCI vendors whose API families qualkit knows; any other vendor is recorded
// by its id.
var pciVendors = map[string]string{"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}

// ProbeDRMClass lists the GPUs of sys/class/drm (sys is the sysfs mount, normally /sys): one entry per
// cardN that is a PCI display controller. Connectors (card0-DP-1) and render nodes are the same
// devices and are skipped; a card that is not a PCI display device (simpledrm, vkms) is skipped
// and named in the detail.
func ProbeDRMClass(sys string) ([]contract.ProbedDevice, contract.DeviceProbe) {
	p := contract.DeviceProbe{Probe: contract.DeviceProbeProbeDRMSysfs}
	dir := filepath.Join(sys, "class", "drm")
	ents, err := os.ReadDir(dir)
	if err != nil {
		p.Status = contract.DeviceProbeStatusNone
		if !os.IsNotExist(err) {
			p.Status = contract.DeviceProbeStatusFailed
		}
		p.Detail = clipRunes(fmt.Sprintf("no DRM class: %v", err), 512)
		return nil, p
	}
	type card struct {
		n    int
		name string
	}
	var cards []card
	for _, e := range ents {
		if m := cardName.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			cards = append(cards, card{n, e.Name()})
		}
	}
	sort.Slice(cards, func(i, j int) bool { return cards[i].n < cards[j].n })
	var devs []contract.ProbedDevice
	var skipped, found []string
	for _, c := range cards {
		d, why := drmCard(sys, filepath.Join(dir, c.name, "device"))
		if why != "" {
			skipped = append(skipped, c.name+" ("+why+")")
			continue
		}
		devs = append(devs, d)
		found = append(found, fmt.Sprintf("%s %s:%s driver %s", c.name, d.PCI.VendorID, d.PCI.DeviceID, d.Driver.Name))
	}
	switch {
	case len(devs) > 0:
		p.Status = contract.DeviceProbeStatusFound
		p.Detail = summarize(found, 8)
	default:
		p.Status = contract.DeviceProbeStatusNone
		p.Detail = "no GPU under " + dir
	}
	if len(skipped) > 0 {
		p.Detail += "; skipped " + summarize(skipped, 8)
	}
	p.Detail = clipRunes(p.Detail, 512)
	return devs, p
}

// drmCard reads one card's PCI device directory; why says why it is not a GPU entry.
func drmCard(sys, dev string) (contract.ProbedDevice, string) {
	vendor, device := readAttr(filepath.Join(dev, "vendor")), readAttr(filepath.Join(dev, "device"))
	if !pciHex4.MatchString(vendor) || !pciHex4.MatchString(device) {
		return contract.ProbedDevice{}, "not a PCI device"
	}
	if class := readAttr(filepath.Join(dev, "class")); class != "" && !strings.HasPrefix(class, "0x03") {
		return contract.ProbedDevice{}, "PCI class " + class + " is not a display controller"
	}
	uevent := map[string]string{}
	for _, line := range strings.Split(readAttr(filepath.Join(dev, "uevent")), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			uevent[k] = v
		}
	}
	drv := uevent["DRIVER"]
	if drv == "" {
		if l, err := os.Readlink(filepath.Join(dev, "driver")); err == nil { // not a contract value: the sysfs driver link
			drv = filepath.Base(l)
		}
	}
	if !safeName.MatchString(drv) {
		return contract.ProbedDevice{}, "no kernel driver bound"
	}
	d := contract.ProbedDevice{Kind: contract.ProbedDeviceKindGPU, Probe: contract.ProbedDeviceProbeDRMSysfs, APIFamilies: []contract.Backend{contract.BackendVulkan},
		PCI: &contract.PCIIdentity{VendorID: vendor, DeviceID: device}, Driver: contract.DeviceDriver{Name: drv}}
	if rev := readAttr(filepath.Join(dev, "revision")); pciHex2.MatchString(rev) {
		d.PCI.Revision = rev
	}
	d.Vendor = vendor
	if name, ok := pciVendors[vendor]; ok {
		d.Vendor = name
	}
	if d.Vendor == "amd" && drv == "amdgpu" {
		d.APIFamilies = []contract.Backend{contract.BackendROCM, contract.BackendVulkan}
	}
	if v := readAttr(filepath.Join(sys, "module", drv, "version")); v != "" {
		d.Driver.Version = ptr(clipRunes(v, 128))
	}
	d.Model = fmt.Sprintf("PCI device %s:%s", vendor, device)
	if name := readAttr(filepath.Join(dev, "product_name")); name != "" {
		d.Model = clipRunes(name, 256)
	}
	if v, ok := parseInt(readAttr(filepath.Join(dev, "mem_info_vram_total"))); ok && v > 0 {
		d.MemoryBytes = &v
	}
	slot := uevent["PCI_SLOT_NAME"]
	if slot == "" {
		if real, err := filepath.EvalSymlinks(dev); err == nil {
			slot = filepath.Base(real)
		}
	}
	if pciBus.MatchString(slot) {
		d.ProvenanceOnly = &contract.DeviceIdentifiers{PCIBusID: strings.ToLower(slot)}
	}
	return d, ""
}

// summarize joins the first n items and counts the rest.
func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
