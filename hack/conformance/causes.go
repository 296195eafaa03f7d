package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// cause is one line of causes.txt: an investigated reason a spec fails on a kubelet, which
// applies only while the failure message still matches what was investigated.
type cause struct {
	kubelet string         // "nodelet", "kubelet" or "any"
	spec    *regexp.Regexp // matched against the spec's full text
	message *regexp.Regexp // matched against the whole failure message (on one line)
	text    string
}

// readCauses parses "KUBELET ## SPEC-REGEX ## MESSAGE-REGEX ## CAUSE" lines; # starts a comment.
func readCauses(path string) ([]cause, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	var causes []cause
	for i, line := range lines {
		f := strings.Split(line, " ## ")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s: entry %d: want KUBELET ## SPEC ## MESSAGE ## CAUSE", path, i+1)
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		if f[0] != "nodelet" && f[0] != "kubelet" && f[0] != "any" {
			return nil, fmt.Errorf("%s: entry %d: kubelet %q is not nodelet, kubelet or any", path, i+1, f[0])
		}
		spec, err := regexp.Compile(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i+1, err)
		}
		msg, err := regexp.Compile(f[2])
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i+1, err)
		}
		causes = append(causes, cause{kubelet: f[0], spec: spec, message: msg, text: f[3]})
	}
	return causes, nil
}

// causeOf returns the investigated cause of spec's failure on kubelet, "" when no line of
// causes.txt matches both the spec and its failure message.
func causeOf(causes []cause, kubelet, spec string, res result) string {
	for _, c := range causes {
		if (c.kubelet == "any" || c.kubelet == kubelet) && c.spec.MatchString(spec) && c.message.MatchString(res.full) {
			return c.text
		}
	}
	return ""
}

// describe is one kubelet's failure for the report: the investigated cause when causes.txt
// has one, then (for nodelet) the error it logged for the spec's pod, then the suite's message.
func describe(causes []cause, kubelet, spec string, res result, podErrs map[string]string) string {
	msg := "suite: " + res.message
	if kubelet == "nodelet" {
		msg = explain(res, podErrs)
	}
	if c := causeOf(causes, kubelet, spec, res); c != "" {
		return "cause: " + c + " — " + msg
	}
	return msg
}

// podInMessage finds the pod a failure message names (`pod "NAME"` or `pod NAME`).
var podInMessage = regexp.MustCompile(`pod "?([a-z0-9][-a-z0-9.]*[a-z0-9])"?`)

// errInLogLine pulls the err="..." value out of a klog structured line.
var errInLogLine = regexp.MustCompile(`err="((?:[^"\\]|\\.)*)"`)

// podErrors maps a pod name to the last error nodelet logged for it, so a spec that merely
// timed out waiting for its pod can name why the pod never ran.
func podErrors(logPath string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(logPath)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "E") {
			continue
		}
		m := errInLogLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		i := strings.Index(line, ` pod="`)
		if i < 0 {
			continue
		}
		ref := line[i+6:]
		ref = ref[:strings.IndexByte(ref+`"`, '"')]
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		out[name] = strings.ReplaceAll(m[1], `\"`, `"`)
	}
	return out
}

// explain prefixes the suite's message with nodelet's own error for the failure's pod, when
// it logged one.
func explain(res result, errs map[string]string) string {
	for _, m := range podInMessage.FindAllStringSubmatch(res.full, -1) {
		if e, ok := errs[m[1]]; ok {
			return "nodelet logged: " + e + " — suite: " + res.message
		}
	}
	return "suite: " + res.message
}
