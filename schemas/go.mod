module github.com/qualkit/qualkit/schemas

go 1.26
