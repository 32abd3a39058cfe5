// Package verdicttest is the check every source's fuzz test ends with: a
// reading decoded from arbitrary input is fed to the verdicts clockwatch
// announces (the stepdown policy, as at a start, and health), and a reading
// whose raw figures mean nothing, or whose figures are over the thresholds,
// must never come out "ok" (issue 24).
package verdicttest
