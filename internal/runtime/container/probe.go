package container

import v1 "k8s.io/api/core/v1"

// SetProbeDefaults fills a probe's unset (or invalid, non-positive) timing fields with the
// API's defaults: 1 s timeout, 10 s period, success threshold 1, failure threshold 3. Static
// pods get them when read (internal/pod/source), and the prober applies them again to whatever
// pod it is given.
func SetProbeDefaults(p *v1.Probe) {
	if p.TimeoutSeconds <= 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds <= 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold <= 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold <= 0 {
		p.FailureThreshold = 3
	}
}
