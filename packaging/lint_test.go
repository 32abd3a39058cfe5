package packaging_test

import (
	"fmt"
	"os/exec"
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
func lintRPM(rpmlint, rpm string) (problems, log string) {
	out, err := exec.Command(rpmlint, "-c", "rpmlint.toml", rpm).CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0 errors, 0 warnings") {
		return fmt.Sprintf("rpmlint (%v): fix, or justify in packaging/rpmlint.toml:\n%s", err, out), string(out)
	}
	return "", string(out)
}
