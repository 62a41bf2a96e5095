module github.com/qualkit/qualkit/verify

go 1.26
