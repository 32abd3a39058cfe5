module github.com/clockwatch/clockwatch

go 1.26.0

require (
	github.com/alecthomas/kingpin/v2 v2.4.0
	github.com/google/go-cmp v0.7.0
	github.com/prometheus/common v0.73.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/alecthomas/units v0.0.0-20240927000941-0f3dac36c52b // indirect
	github.com/xhit/go-str2duration/v2 v2.1.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
