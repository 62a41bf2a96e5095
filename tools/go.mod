module github.com/qualkit/qualkit/tools

go 1.26

require (
	github.com/qualkit/qualkit/schemas v0.0.0-00010101000000-000000000000
	github.com/rogpeppe/go-internal v1.16.0
	github.com/urfave/cli/v2 v2.27.7
)
