//go:build linux

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

// runner runs a clockwatch command line for at most timeout (a watch
// runs until then) and returns its exit code and output.
type runner func(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string)

// inProcess runs command lines as c's environment and default configuration
// file say.
func inProcess(env map[string]string, defaultConfigFile string) runner {
	return func(t *testing.T, timeout time.Duration, args ...string) (int, string, string) {
		c, out, errOut := cliWith(env, defaultConfigFile)
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		code := c.run(ctx, args)
		return code, out.String(), errOut.String()
	}
}

// asBinary runs command lines with the built binary and env (NAME=value)
// added to this process's environment.
func asBinary(env ...string) runner {
	return func(t *testing.T, timeout time.Duration, args ...string) (int, string, string) {
		code, stdout, stderr, _ := execBinary(t, timeout, env, args...)
		return code, stdout, stderr
	}
}

// reachesDaemon runs watch and drill and fails unless both reached the
// daemon: watch printed its hello, drill ran or was refused by the daemon for
// the state it is in (which depends on this host's time daemon).
func reachesDaemon(t *testing.T, run runner, args ...string) {
	t.Helper()
	_, out, errOut := run(t, 3*time.Second, append([]string{"watch", "--json"}, args...)...)
	if !strings.Contains(out, `"type":"hello"`) {
		t.Errorf("watch %q printed no hello; stdout %q, stderr %q", args, out, errOut)
	}
	code, out, errOut := run(t, 30*time.Second, append([]string{"drill", "--hold=100ms"}, args...)...)
	if code != 0 && !strings.Contains(errOut, "no drill: the state is") {
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
		reachesDaemon(t, asBinary("RUNTIME_DIRECTORY="+d.RuntimeDir, "STATE_DIRECTORY="+d.StateDir))
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
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("the daemon did not open stepdown.socket %s: %v", socket, err)
	}
	t.Run("--config.file", func(t *testing.T) {
		reachesDaemon(t, asBinary("RUNTIME_DIRECTORY="+d.RuntimeDir), "--config.file="+conf)
	})
	t.Run("default config file", func(t *testing.T) {
		reachesDaemon(t, inProcess(map[string]string{"RUNTIME_DIRECTORY": d.RuntimeDir}, conf))
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
