package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// curl exit codes the callers look at.
const (
	curlConnectFailed = 7
	curlTimedOut      = 28
	curlOtherError    = 1
)

type curlOptions struct {
	url            string
	method         string
	output         string // "" = stdout
	writeOut       string // -w: only %{http_code} is expanded
	includeHeaders bool
	silent         bool
	insecure       bool
	maxTime        time.Duration
	connectTimeout time.Duration
}

func parseCurl(args []string) (curlOptions, error) {
	o := curlOptions{method: http.MethodGet}
	seconds := func(v string) (time.Duration, error) {
		f, err := strconv.ParseFloat(v, 64)
		return time.Duration(f * float64(time.Second)), err
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		var err error
		switch a {
		case "-g", "--globoff", "-q", "-S", "--show-error", "-f", "--fail", "-L":
		case "-s", "--silent":
			o.silent = true
		case "-i", "--include":
			o.includeHeaders = true
		case "-k", "--insecure":
			o.insecure = true
		case "-o", "--output":
			o.output, err = value()
		case "-w", "--write-out":
			o.writeOut, err = value()
		case "-X", "--request":
			o.method, err = value()
		case "--max-time", "-m":
			var v string
			if v, err = value(); err == nil {
				o.maxTime, err = seconds(v)
			}
		case "--connect-timeout":
			var v string
			if v, err = value(); err == nil {
				o.connectTimeout, err = seconds(v)
			}
		default:
			if strings.HasPrefix(a, "-") {
				return o, fmt.Errorf("unsupported option %s", a)
			}
			o.url = a
		}
		if err != nil {
			return o, err
		}
	}
	if o.url == "" {
		return o, errors.New("no URL given")
	}
	if !strings.Contains(o.url, "://") {
		o.url = "http://" + o.url
	}
	return o, nil
}

func curl(args []string, stdout, stderr io.Writer) int {
	o, err := parseCurl(args)
	if err != nil {
		return usageError(stderr, "curl", err)
	}
	ctx := context.Background()
	if o.maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.maxTime)
		defer cancel()
	}
	dialer := &net.Dialer{Timeout: o.connectTimeout}
	client := &http.Client{
		Transport: &http.Transport{
			DialContext:     dialer.DialContext,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: o.insecure}, //nolint:gosec // -k asks for it
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, nil)
	if err != nil {
		return usageError(stderr, "curl", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		if !o.silent {
			fmt.Fprintf(stderr, "curl: %v\n", err)
		}
		return curlErrorCode(err)
	}
	defer resp.Body.Close()
	out := stdout
	if o.output != "" {
		f, err := os.Create(o.output)
		if err != nil {
			fmt.Fprintf(stderr, "curl: %v\n", err)
			return 23
		}
		defer f.Close()
		out = f
	}
	if o.includeHeaders {
		fmt.Fprintf(out, "%s %s\r\n", resp.Proto, resp.Status)
		_ = resp.Header.Write(out)
		fmt.Fprint(out, "\r\n")
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		return curlErrorCode(err)
	}
	if o.writeOut != "" {
		fmt.Fprint(stdout, strings.ReplaceAll(o.writeOut, "%{http_code}", fmt.Sprintf("%03d", resp.StatusCode)))
	}
	return 0
}

func curlErrorCode(err error) int {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return curlTimedOut
	case errors.Is(err, os.ErrDeadlineExceeded):
		return curlTimedOut
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return curlConnectFailed
	}
	return curlOtherError
}
