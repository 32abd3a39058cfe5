package exporter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// MergeGatherers returns a Gatherer of the families of first and of the
// others, sorted by name as a registry sorts them. The families must be
// disjoint (each family comes from one of them); unlike
// prometheus.Gatherers it does not check every metric again, which costs as
// much as gathering. A family found in two of them is an error, and only
// the first's is kept.
func MergeGatherers(first prometheus.Gatherer, others ...prometheus.Gatherer) prometheus.Gatherer {
	if len(others) == 0 {
		return first
	}
	return mergedGatherers(append([]prometheus.Gatherer{first}, others...))
}

type mergedGatherers []prometheus.Gatherer

// Gather implements prometheus.Gatherer.
func (gs mergedGatherers) Gather() ([]*dto.MetricFamily, error) {
	var out []*dto.MetricFamily
	var errs []error
	for _, g := range gs {
		mfs, err := g.Gather()
		if err != nil {
			errs = append(errs, err)
		}
		before := len(out)
		out = mergeSorted(out, mfs)
		if len(out) != before+len(mfs) {
			errs = append(errs, fmt.Errorf("merging gatherers: %d families found twice", before+len(mfs)-len(out)))
		}
	}
	return out, errors.Join(errs...)
}

// mergeSorted merges two lists of families sorted by name into a new one; a
// name in both keeps a's family.
func mergeSorted(a, b []*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch c := strings.Compare(a[0].GetName(), b[0].GetName()); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}
