module github.com/qualkit/qualkit/runner

go 1.26

require (
	github.com/prometheus/procfs v0.22.0
	github.com/qualkit/qualkit/schemas v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.47.0
)

require (
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.14.0 // indirect
)
