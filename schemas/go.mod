module github.com/qualkit/qualkit/schemas

go 1.26

require (
	github.com/opencontainers/go-digest v1.0.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	golang.org/x/text v0.14.0
)
