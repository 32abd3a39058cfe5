package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
)

// cliWith is a command line with this environment and default configuration
// file instead of the process's.
func cliWith(env map[string]string, defaultConfigFile string) (*cli, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }, defaultConfigFile: defaultConfigFile}, &out, &errOut
}

// reachesDaemon runs watch and drill as c and fails unless both reached the
// daemon: watch printed its hello, drill ran or was refused by the daemon for
// the state it is in (which depends on this host's time daemon).
func reachesDaemon(t *testing.T, mk func() (*cli, *bytes.Buffer, *bytes.Buffer), args ...string) {
	t.Helper()
	c, out, errOut := mk()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	c.run(ctx, append([]string{"watch", "--json"}, args...))
	if !strings.Contains(out.String(), `"type":"hello"`) {
		t.Errorf("watch %q printed no hello; stdout %q, stderr %q", args, out, errOut)
	}
	c, out, errOut = mk()
	code := c.run(t.Context(), append([]string{"drill", "--hold=100ms"}, args...))
	if code != 0 && !strings.Contains(errOut.String(), "no drill: the state is") {
		t.Errorf("drill %q: exit %d, stdout %q, stderr %q; want it to reach the daemon", args, code, out, errOut)
	}
}

// Every subcommand finds the stepdown socket where the daemon opened it:
// under RUNTIME_DIRECTORY, at stepdown.socket of --config.file, and at that
// of the default configuration file.
func TestSubcommandsFindTheDaemonsSocket(t *testing.T) {
	t.Parallel()
	t.Run("RUNTIME_DIRECTORY", func(t *testing.T) {
		t.Parallel()
		d := daemontest.Start(t, binary, daemontest.Options{Args: []string{noChronyConfig(t)}})
		env := map[string]string{"RUNTIME_DIRECTORY": d.RuntimeDir, "STATE_DIRECTORY": d.StateDir}
		reachesDaemon(t, func() (*cli, *bytes.Buffer, *bytes.Buffer) { return cliWith(env, "") })
	})

	dir := t.TempDir()
	socket := filepath.Join(dir, "custom", "stepdown.sock")
	conf := filepath.Join(dir, "clockwatch.yml")
	yml := "chrony:\n  address: " + filepath.Join(dir, "no-chronyd.sock") + "\n  conf_path: testdata/chrony.conf\nstepdown:\n  socket: " + socket + "\n"
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, binary, daemontest.Options{Args: []string{"--config.file=" + conf}})
	// RUNTIME_DIRECTORY does not move a configured socket, for the daemon
	// or for the subcommands.
	env := map[string]string{"RUNTIME_DIRECTORY": d.RuntimeDir}
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("the daemon did not open stepdown.socket %s: %v", socket, err)
	}
	t.Run("--config.file", func(t *testing.T) {
		reachesDaemon(t, func() (*cli, *bytes.Buffer, *bytes.Buffer) { return cliWith(env, "") }, "--config.file="+conf)
	})
	t.Run("default config file", func(t *testing.T) {
		reachesDaemon(t, func() (*cli, *bytes.Buffer, *bytes.Buffer) { return cliWith(env, conf) })
	})
}

func TestConfigPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	def := filepath.Join(dir, "clockwatch.yml")
	if err := os.WriteFile(def, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		def      string
		flag     string
		flagSet  bool
		wantPath string
	}{
		{"default file exists", def, "", false, def},
		{"default file absent", filepath.Join(dir, "absent.yml"), "", false, ""},
		{"flag wins", def, "/x.yml", true, "/x.yml"},
		{"empty flag: built-in defaults", def, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := cliWith(nil, tc.def)
			c.configFile, c.configFileSet = tc.flag, tc.flagSet
			if got := c.configPath(); got != tc.wantPath {
				t.Errorf("configPath() = %q, want %q", got, tc.wantPath)
			}
		})
	}
}
