module github.com/clockwatch/clockwatch

go 1.26.0

require (
	github.com/alecthomas/kingpin/v2 v2.4.0
	github.com/prometheus/common v0.73.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/alecthomas/units v0.0.0-20240927000941-0f3dac36c52b // indirect
	github.com/beevik/ntp v1.6.0 // indirect
	github.com/facebook/time v0.0.0-20260822211804-f81aedc1c1e3 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/xhit/go-str2duration/v2 v2.1.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.61.0 // indirect
)
