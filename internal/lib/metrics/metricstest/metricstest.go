// Package metricstest reads nodelet's metrics registry for the tests of the packages that
// record into it (it imports only internal/lib/metrics, so any package's tests may use it).
package metricstest

import "github.com/nodelet/nodelet/internal/lib/metrics"

// T is the part of testing.TB Value uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Value reads nodelet's metrics registry: the sum over the series of family name whose
// labels hold every pair of want (counter and gauge values, histogram sample counts); found is
// false when no series matches.
func Value(t T, name string, want map[string]string) (sum float64, found bool) {
	t.Helper()
	families, err := metrics.Registry().Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			found = true
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}
