package main

import (
	"fmt"
	"sort"
)

// sample is one figure's value from each round that took it.
type sample []float64

func (s sample) sorted() []float64 {
	out := append([]float64(nil), s...)
	sort.Float64s(out)
	return out
}

// median is the middle value (the mean of the two middle ones for an even count); 0 when empty.
func (s sample) median() float64 {
	v := s.sorted()
	switch {
	case len(v) == 0:
		return 0
	case len(v)%2 == 1:
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// cell is the median with the spread (lowest–highest) when more than one round took it.
func (s sample) cell(unit func(float64) string) string {
	if len(s) == 0 {
		return "–"
	}
	if len(s) == 1 {
		return unit(s[0]) + " (1 run)"
	}
	v := s.sorted()
	return fmt.Sprintf("%s (%s–%s)", unit(s.median()), unit(v[0]), unit(v[len(v)-1]))
}

// ratioCell divides medians: "0.52×".
func ratioCell(a, b sample) string {
	if len(a) == 0 || len(b) == 0 {
		return "–"
	}
	return ratio(a.median(), b.median())
}

// fromSubjects collects get over the rounds in which which(round) ran; get's ok=false skips a round.
func fromSubjects(rs []round, which func(round) *subjectResult, get func(*subjectResult) (float64, bool)) sample {
	var s sample
	for _, r := range rs {
		if res := which(r); res != nil {
			if v, ok := get(res); ok {
				s = append(s, v)
			}
		}
	}
	return s
}

// fromFloor collects get over the rounds' floor results.
func fromFloor(rs []round, get func(*floorResult) (float64, bool)) sample {
	var s sample
	for _, r := range rs {
		if r.floor != nil {
			if v, ok := get(r.floor); ok {
				s = append(s, v)
			}
		}
	}
	return s
}

func nodeletOf(r round) *subjectResult  { return r.nodelet }
func upstreamOf(r round) *subjectResult { return r.upstream }
