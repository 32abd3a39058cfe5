module github.com/clockwatch/clockwatch/stepdown

go 1.24
