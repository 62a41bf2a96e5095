module github.com/qualkit/qualkit/runner

go 1.26
