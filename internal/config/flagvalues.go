package config

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The pflag.Value types below accept repeated flags: the first use on the
// command line replaces the default, later uses add to it.

// headerValue parses HTTP headers given as "name:value" pairs, separated by
// commas, into a map from header name to its values.
type headerValue struct {
	headers *map[string][]string
	changed bool
}

func (h *headerValue) Set(s string) error {
	if !h.changed {
		*h.headers = map[string][]string{}
		h.changed = true
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("malformed header %q: want name:value", pair)
		}
		(*h.headers)[name] = append((*h.headers)[name], strings.TrimSpace(value))
	}
	return nil
}

func (h *headerValue) String() string {
	var pairs []string
	for _, name := range sortedKeys(*h.headers) {
		for _, value := range (*h.headers)[name] {
			pairs = append(pairs, name+":"+value)
		}
	}
	return strings.Join(pairs, ",")
}

func (h *headerValue) Type() string { return "name:value" }

// thresholdValue parses eviction thresholds given as "signal<quantity" pairs,
// separated by commas.
type thresholdValue struct {
	thresholds *map[string]string
	changed    bool
}

func (t *thresholdValue) Set(s string) error {
	if !t.changed {
		*t.thresholds = map[string]string{}
		t.changed = true
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		signal, threshold, ok := strings.Cut(pair, "<")
		signal = strings.TrimSpace(signal)
		if !ok || signal == "" {
			return fmt.Errorf("malformed threshold %q: want signal<quantity", pair)
		}
		(*t.thresholds)[signal] = strings.TrimSpace(threshold)
	}
	return nil
}

func (t *thresholdValue) String() string {
	pairs := make([]string, 0, len(*t.thresholds))
	for _, signal := range sortedKeys(*t.thresholds) {
		pairs = append(pairs, signal+"<"+(*t.thresholds)[signal])
	}
	return strings.Join(pairs, ",")
}

func (t *thresholdValue) Type() string { return "signal<quantity" }

// taintsValue parses taints given as "key[=value]:Effect", separated by commas.
type taintsValue struct {
	taints  *[]corev1.Taint
	changed bool
}

func (t *taintsValue) Set(s string) error {
	if !t.changed {
		*t.taints = nil
		t.changed = true
	}
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		taint, err := parseTaint(spec)
		if err != nil {
			return err
		}
		*t.taints = append(*t.taints, taint)
	}
	return nil
}

func parseTaint(spec string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(spec, ":")
	if !ok || effect == "" {
		return corev1.Taint{}, fmt.Errorf("malformed taint %q: want key[=value]:Effect", spec)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	if key == "" {
		return corev1.Taint{}, fmt.Errorf("malformed taint %q: empty key", spec)
	}
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

func (t *taintsValue) String() string {
	specs := make([]string, 0, len(*t.taints))
	for _, taint := range *t.taints {
		spec := taint.Key
		if taint.Value != "" {
			spec += "=" + taint.Value
		}
		specs = append(specs, spec+":"+string(taint.Effect))
	}
	return strings.Join(specs, ",")
}

func (t *taintsValue) Type() string { return "key=value:Effect" }
