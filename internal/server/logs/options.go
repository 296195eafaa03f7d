package logs

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodeLogOptions reads the query into v1.PodLogOptions the way the API machinery decodes
// query parameters: booleans are false only when absent, "0" or "false"; numbers are
// base-10 int64; sinceTime is RFC3339. The old "tail" parameter still works ("all" = all).
func decodeLogOptions(query url.Values) (*v1.PodLogOptions, error) {
	q := url.Values{}
	for k, vs := range query {
		q[k] = vs
	}
	if tail := q.Get("tail"); tail != "" {
		q["tailLines"] = []string{tail}
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	opts := &v1.PodLogOptions{
		Follow: queryBool(q, "follow"), Previous: queryBool(q, "previous"),
		Timestamps: queryBool(q, "timestamps"), InsecureSkipTLSVerifyBackend: queryBool(q, "insecureSkipTLSVerifyBackend"),
	}
	var err error
	if opts.SinceSeconds, err = queryInt64(q, "sinceSeconds"); err != nil {
		return nil, err
	}
	if opts.TailLines, err = queryInt64(q, "tailLines"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = queryInt64(q, "limitBytes"); err != nil {
		return nil, err
	}
	if vs, ok := q["sinceTime"]; ok && len(vs) > 0 {
		t := &metav1.Time{}
		if err := t.UnmarshalQueryParameter(vs[0]); err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		opts.SinceTime = t
	}
	if vs, ok := q["stream"]; ok && len(vs) > 0 {
		stream := vs[0]
		opts.Stream = &stream
	}
	return opts, nil
}

func queryBool(q url.Values, key string) bool {
	vs, ok := q[key]
	if !ok || len(vs) == 0 {
		return false
	}
	return vs[0] != "0" && !strings.EqualFold(vs[0], "false")
}

func queryInt64(q url.Values, key string) (*int64, error) {
	vs, ok := q[key]
	if !ok || len(vs) == 0 {
		return nil, nil
	}
	v, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return &v, nil
}

// validateLogOptions applies the API's rules for PodLogOptions, with stream selection on.
func validateLogOptions(o *v1.PodLogOptions) error {
	var errs []error
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, fmt.Errorf("tailLines: must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, fmt.Errorf("limitBytes: must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, fmt.Errorf("at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, fmt.Errorf("sinceSeconds: must be greater than 0"))
	}
	if o.Stream != nil {
		switch s := *o.Stream; s {
		case v1.LogStreamStdout, v1.LogStreamStderr, v1.LogStreamAll:
			if s != v1.LogStreamAll && o.TailLines != nil {
				errs = append(errs, fmt.Errorf("`tailLines` and specific `stream` are mutually exclusive for now"))
			}
		default:
			errs = append(errs, fmt.Errorf("stream: unsupported value %q: supported values: %q, %q, %q",
				s, v1.LogStreamStdout, v1.LogStreamStderr, v1.LogStreamAll))
		}
	}
	return errors.Join(errs...)
}

// readerOptions converts API options to reader options; sinceSeconds counts back from now
// and the later of sinceSeconds and sinceTime wins.
func readerOptions(o *v1.PodLogOptions, now time.Time) Options {
	opts := Options{Follow: o.Follow, Timestamps: o.Timestamps, TailLines: -1, Stream: v1.LogStreamAll}
	if o.TailLines != nil {
		opts.TailLines = *o.TailLines
	}
	if o.LimitBytes != nil {
		opts.LimitBytes = *o.LimitBytes
	}
	if o.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(opts.Since) {
		opts.Since = o.SinceTime.Time
	}
	if o.Stream != nil {
		opts.Stream = *o.Stream
	}
	return opts
}
