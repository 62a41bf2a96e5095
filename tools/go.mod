module github.com/qualkit/qualkit/tools

go 1.26
