package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

// wantsSARIF reports whether the command line asks for SARIF (-sarif or
// --sarif), which singlechecker does not know: that run is ours.
func wantsSARIF(args []string) bool {
	for _, a := range args {
		if a == "-sarif" || a == "--sarif" || a == "-sarif=true" || a == "--sarif=true" {
			return true
		}
		if a == "--" {
			break
		}
	}
	return false
}

// runSARIF analyses the packages named on the command line (relative to dir,
// the working directory when empty) and writes the
// findings as one SARIF 2.1.0 run to out, for code-scanning UIs. It exits 0
// whatever it found (as -json does): the upload step reads the file, and a
// build that must fail runs clockwatch-vet without -sarif too.
func runSARIF(args []string, dir string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("clockwatch-vet", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Bool("sarif", true, "write the findings as SARIF 2.1.0 to standard output")
	tests := fs.Bool("test", true, "also analyse the packages' tests")
	ambiguous := fs.Bool("ambiguous", true, "also report "+wallclock.CategoryAmbiguous)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(errOut, "clockwatch-vet -sarif: name the packages, as in clockwatch-vet -sarif ./...")
		return 2
	}
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			fmt.Fprintf(errOut, "clockwatch-vet: %v\n", err)
			return 1
		}
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Tests: *tests, Dir: dir}, fs.Args()...)
	if err != nil {
		fmt.Fprintf(errOut, "clockwatch-vet: loading %v: %v\n", fs.Args(), err)
		return 1
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		return 1
	}
	a := wallclock.New(wallclock.Config{Ambiguous: *ambiguous})
	graph, err := checker.Analyze([]*analysis.Analyzer{a}, pkgs, nil)
	if err != nil {
		fmt.Fprintf(errOut, "clockwatch-vet: %v\n", err)
		return 1
	}
	var results []sarifResult
	seen := map[string]bool{} // a package and its test variant report the same line
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			fmt.Fprintf(errOut, "clockwatch-vet: %s: %v\n", act.Package.PkgPath, act.Err)
			return 1
		}
		for _, d := range act.Diagnostics {
			r := result(act.Package.Fset, dir, d)
			key := fmt.Sprint(r.RuleID, r.Locations[0].PhysicalLocation.ArtifactLocation.URI, r.Locations[0].PhysicalLocation.Region, r.Message.Text)
			if !seen[key] {
				seen[key] = true
				results = append(results, r)
			}
		}
	}
	sort.SliceStable(results, func(i, j int) bool {
		pi, pj := results[i].Locations[0].PhysicalLocation, results[j].Locations[0].PhysicalLocation
		if pi.ArtifactLocation.URI != pj.ArtifactLocation.URI {
			return pi.ArtifactLocation.URI < pj.ArtifactLocation.URI
		}
		return pi.Region.StartLine < pj.Region.StartLine
	})
	if results == nil {
		results = []sarifResult{}
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool: sarifTool{Driver: sarifDriver{
				Name:           "clockwatch-vet",
				InformationURI: wallclock.Analyzer.URL,
				Rules: []sarifRule{
					{ID: wallclock.CategoryInterval, Name: "WallClockInterval", Short: sarifText{"An interval, timeout, deadline or expiry decided by the wall clock"}, Default: sarifLevel{"error"}},
					{ID: wallclock.CategoryAmbiguous, Name: "WallClockOrdering", Short: sarifText{"Two stored wall-clock readings compared: an ordering or a deadline"}, Default: sarifLevel{"note"}},
					{ID: wallclock.CategoryDirective, Name: "WallClockDirective", Short: sarifText{"A clockwatch:wallclock-ok directive without a reason, or misspelt"}, Default: sarifLevel{"warning"}},
				},
			}},
			Results: results,
		}},
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(log); err != nil {
		fmt.Fprintf(errOut, "clockwatch-vet: writing SARIF: %v\n", err)
		return 1
	}
	return 0
}

func result(fset *token.FileSet, wd string, d analysis.Diagnostic) sarifResult {
	start := fset.Position(d.Pos)
	end := start
	if d.End.IsValid() {
		end = fset.Position(d.End)
	}
	uri := start.Filename
	if rel, err := filepath.Rel(wd, uri); err == nil && filepath.IsLocal(rel) {
		uri = filepath.ToSlash(rel)
	}
	rule := d.Category
	if rule == "" {
		rule = wallclock.CategoryInterval
	}
	level := "error"
	switch rule {
	case wallclock.CategoryAmbiguous:
		level = "note"
	case wallclock.CategoryDirective:
		level = "warning"
	}
	r := sarifResult{
		RuleID:  rule,
		Level:   level,
		Message: sarifText{d.Message},
		Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
			ArtifactLocation: sarifArtifact{URI: uri},
			Region:           sarifRegion{StartLine: start.Line, StartColumn: start.Column, EndLine: end.Line, EndColumn: end.Column},
		}}},
	}
	for _, f := range d.SuggestedFixes {
		fix := sarifFix{Description: sarifText{f.Message}}
		for _, e := range f.TextEdits {
			s, en := fset.Position(e.Pos), fset.Position(e.End)
			fix.Changes = append(fix.Changes, sarifChange{
				ArtifactLocation: sarifArtifact{URI: uri},
				Replacements: []sarifReplacement{{
					Deleted:  sarifRegion{StartLine: s.Line, StartColumn: s.Column, EndLine: en.Line, EndColumn: en.Column},
					Inserted: sarifContent{Text: string(e.NewText)},
				}},
			})
		}
		r.Fixes = append(r.Fixes, fix)
	}
	return r
}

// The parts of SARIF 2.1.0 (OASIS) that clockwatch-vet writes.
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool    sarifTool     `json:"tool"`
		Results []sarifResult `json:"results"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		InformationURI string      `json:"informationUri"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID      string     `json:"id"`
		Name    string     `json:"name"`
		Short   sarifText  `json:"shortDescription"`
		Default sarifLevel `json:"defaultConfiguration"`
	}
	sarifLevel struct {
		Level string `json:"level"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID    string          `json:"ruleId"`
		Level     string          `json:"level"`
		Message   sarifText       `json:"message"`
		Locations []sarifLocation `json:"locations"`
		Fixes     []sarifFix      `json:"fixes,omitempty"`
	}
	sarifLocation struct {
		PhysicalLocation sarifPhysical `json:"physicalLocation"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           sarifRegion   `json:"region"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
		EndLine     int `json:"endLine"`
		EndColumn   int `json:"endColumn"`
	}
	sarifFix struct {
		Description sarifText     `json:"description"`
		Changes     []sarifChange `json:"artifactChanges"`
	}
	sarifChange struct {
		ArtifactLocation sarifArtifact      `json:"artifactLocation"`
		Replacements     []sarifReplacement `json:"replacements"`
	}
	sarifReplacement struct {
		Deleted  sarifRegion  `json:"deletedRegion"`
		Inserted sarifContent `json:"insertedContent"`
	}
	sarifContent struct {
		Text string `json:"text"`
	}
)
