// Package config holds clockwatch's behaviour settings, read from an optional
// YAML file: defaults first, then strict decoding (an unknown key is an
// error), then validation whose messages name the file, line and key.
//
// Process settings (listen address, log level, paths) are flags in
// cmd/clockwatch, not here.
package config
