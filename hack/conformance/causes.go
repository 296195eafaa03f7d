package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
)

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

// explain appends nodelet's own error for the failure's pod, when it logged one.
func explain(message string, errs map[string]string) string {
	for _, m := range podInMessage.FindAllStringSubmatch(message, -1) {
		if e, ok := errs[m[1]]; ok {
			return "nodelet: " + e + " — suite: " + message
		}
	}
	return message
}
