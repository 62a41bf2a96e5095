module github.com/qualkit/qualkit/attest

go 1.26
