module github.com/qualkit/qualkit/verify

go 1.26

require github.com/qualkit/qualkit/schemas v0.0.0-00010101000000-000000000000
