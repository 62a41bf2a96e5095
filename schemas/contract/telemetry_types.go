package contract

// TelemetrySampleDoc is one reading of one device (qualkit.telemetry-sample.v1), a line of a
// row's device telemetry JSONL. A reading is never used to pause, extend or gate anything.
type TelemetrySampleDoc struct {
	Schema string `json:"schema"`
	// TNs is when the reading began, in ns from the campaign epoch.
	TNs int64 `json:"t_ns"`
	// Device indexes the receipt's environment.devices.
	Device          int64    `json:"device"`
	Source          string   `json:"source"`
	PowerW          *float64 `json:"power_w"`
	EnergyJ         *float64 `json:"energy_j"`
	SMClockMHz      *int64   `json:"sm_clock_mhz"`
	MemClockMHz     *int64   `json:"mem_clock_mhz"`
	GPUUtilPct      *int64   `json:"gpu_util_pct"`
	MemUtilPct      *int64   `json:"mem_util_pct"`
	MemoryUsedBytes *int64   `json:"memory_used_bytes"`
	TemperatureC    *float64 `json:"temperature_c"`
	ThrottleReasons []string `json:"throttle_reasons"`
	ECCUncorrected  *int64   `json:"ecc_uncorrected"`
	XidEvents       *int64   `json:"xid_events"`
	Errors          []string `json:"errors"`
}

// DeviceTelemetry declares a serving case's device telemetry sampler.
type DeviceTelemetry struct {
	IntervalMs int64 `json:"interval_ms"`
}

// RowDeviceTelemetry binds a row's device telemetry samples and what they showed.
type RowDeviceTelemetry struct {
	Samples    FileRef  `json:"samples"`
	IntervalMs int64    `json:"interval_ms"`
	Devices    []int64  `json:"devices"`
	Flags      []string `json:"flags"`
	Warnings   []string `json:"warnings"`
}
