package daemon

import (
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// maxWebFileBytes bounds the web configuration and the certificates and
// keys it names.
const maxWebFileBytes = 1 << 20

// checkWebConfig reads --web.config.file and the files it names (the TLS
// certificate, key and client CA) through safefile before exporter-toolkit
// does: the toolkit reads them with os.ReadFile, which blocks for ever on a
// FIFO and reads a link to /dev/zero until memory runs out. A file refused
// here stops the start with its name. (The toolkit reads the files again at
// each connection, to pick up rotated certificates; a file replaced by a FIFO
// after the start stalls only that connection's goroutine, within the
// connection cap, never the announcer or a SIGTERM.)
func checkWebConfig(path string) error {
	if path == "" {
		return nil
	}
	spec := func(what string) safefile.Spec {
		return safefile.Spec{What: what, Limit: maxWebFileBytes, Links: safefile.LinksWithinDir}
	}
	b, err := safefile.Read(spec("--web.config.file"), path)
	if err != nil {
		return err
	}
	var wc struct {
		TLS struct {
			Cert string `yaml:"cert_file"`
			Key  string `yaml:"key_file"`
			CA   string `yaml:"client_ca_file"`
		} `yaml:"tls_server_config"`
	}
	// Not strict: the toolkit validates the file itself; this only finds
	// the paths in it.
	if err := yaml.Unmarshal(b, &wc); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	for _, f := range []struct{ what, path string }{
		{"the web config's cert_file", wc.TLS.Cert}, {"the web config's key_file", wc.TLS.Key}, {"the web config's client_ca_file", wc.TLS.CA},
	} {
		if f.path == "" {
			continue
		}
		p := f.path
		if !filepath.IsAbs(p) { // the toolkit's SetDirectory: relative to the file
			p = filepath.Join(filepath.Dir(path), p)
		}
		if _, err := safefile.Read(spec(f.what), p); err != nil {
			return err
		}
	}
	return nil
}
