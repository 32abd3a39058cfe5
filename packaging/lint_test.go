package packaging_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// lintDeb runs lintian on the .deb and says what is wrong, "" when nothing:
// no error, warning or unused override may be left (the tags kept are
// justified in packaging/lintian-overrides, which the package installs where
// lintian reads it).
func lintDeb(lintian, deb string) (problems, log string) {
	cmd := exec.Command(lintian, "--display-info", "--tag-display-limit", "0", "--fail-on", "error,warning", deb)
	out, err := cmd.CombinedOutput()
	var tags []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") || strings.Contains(line, "unused-override") ||
			strings.Contains(line, "mismatched-override") {
			tags = append(tags, strings.TrimSpace(line))
		}
	}
	if err != nil || len(tags) > 0 {
		return fmt.Sprintf("lintian (%v): fix, or justify in packaging/lintian-overrides:\n%s", err, strings.Join(tags, "\n")), string(out)
	}
	return "", string(out)
}

// lintRPM runs rpmlint on the .rpm with packaging/rpmlint.toml, whose filters
// justify the findings kept: none may be left.
//
// rpmlint unpacks the package with `rpm2cpio | cpio -id` in a temporary
// directory, but nfpm's payload names files by absolute path (/usr/bin/...)
// and GNU cpio extracts absolute names where they say: rpmlint 2.4 wrote the
// package onto this machine's / (seen on a fresh machine, where the host
// check caught /etc/clockwatch appearing), and linted an empty directory. A
// cpio first in its PATH adds --no-absolute-filenames, so the files land in
// rpmlint's directory and are linted there; HOME in dir keeps the rpm
// database and the spelling dictionary it creates off the host's /root.
func lintRPM(rpmlint, rpm, dir string) (problems, log string) {
	bin := filepath.Join(dir, "bin")
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		return fmt.Sprintf("rpmlint unpacks with cpio: %v", err), ""
	}
	wrapper := "#!/bin/sh\nexec " + cpio + " --no-absolute-filenames \"$@\"\n"
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err.Error(), ""
	}
	if err := os.WriteFile(filepath.Join(bin, "cpio"), []byte(wrapper), 0o755); err != nil {
		return err.Error(), ""
	}
	cmd := exec.Command(rpmlint, "-c", "rpmlint.toml", rpm)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir, "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0 errors, 0 warnings") {
		return fmt.Sprintf("rpmlint (%v): fix, or justify in packaging/rpmlint.toml:\n%s", err, out), string(out)
	}
	return "", string(out)
}
