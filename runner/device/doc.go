// Package device identifies the compute devices of a Linux host, as provenance for a receipt and
// for the preflight check of a variant's device_requirement.
//
// Three probes run: NVML for NVIDIA GPUs (github.com/NVIDIA/go-nvml, which loads libnvidia-ml at
// run time, so a host without the library, and a build without cgo, report the probe as
// unsupported instead of failing), the DRM class of sysfs for every GPU with a kernel driver (AMD,
// Intel and others: the PCI vendor, device and revision ids, the driver and its version, VRAM where
// the driver exposes it) and /proc for the CPU. A probe that cannot run says so in its
// [schemas.DeviceProbe]; nothing is guessed.
//
// A device serves a backend by API family, never by product name: cuda needs a device NVML
// identified, rocm an AMD GPU bound to amdgpu, vulkan any GPU with a DRM device, cpu the processor;
// metal is never served on Linux. Names, UUIDs and serial numbers are provenance: nothing selects
// or requires them.
//
// Tests point the probes at a fixture (Options.Fixture: a directory with a sys/ and proc/ tree and
// an optional nvml.json); every device and probe result read from a fixture is marked fixture, so
// a fixture can never make a receipt claim a device its host did not have.
package device
