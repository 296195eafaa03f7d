// Command nmeter stands in for busybox's nmeter applet, which the Debian busybox build lacks,
// in the test busybox image. It covers what the node e2e suite uses: `nmeter -d0 '%3t'`, the
// wall clock with N decimals of a second, one line per delay (-d, milliseconds) until the
// reader goes away (`| head -n1`). Other format text is printed as is.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	delay, format, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nmeter:", err)
		fmt.Fprintln(os.Stderr, "usage: nmeter [-dMSEC] FORMAT (only the time conversion, percent-t with optional decimals)")
		os.Exit(2)
	}
	for {
		if _, err := fmt.Println(render(format, time.Now().UTC())); err != nil {
			return // the reader is gone
		}
		time.Sleep(max(delay, time.Millisecond))
	}
}

// parseArgs reads busybox's "-dMSEC" or "-d MSEC" and the format.
func parseArgs(args []string) (time.Duration, string, error) {
	delay := time.Second
	for len(args) > 0 && strings.HasPrefix(args[0], "-d") {
		value := strings.TrimPrefix(args[0], "-d")
		args = args[1:]
		if value == "" && len(args) > 0 {
			value, args = args[0], args[1:]
		}
		ms, err := strconv.Atoi(value)
		if err != nil || ms < 0 {
			return 0, "", fmt.Errorf("bad delay %q", value)
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	if len(args) != 1 {
		return 0, "", fmt.Errorf("want one format argument, got %d", len(args))
	}
	return delay, args[0], nil
}

// render expands %t (HH:MM:SS) and %Nt (with N decimals, 1-9) in format.
func render(format string, now time.Time) string {
	var out strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 >= len(format) {
			out.WriteByte(format[i])
			continue
		}
		decimals := 0
		j := i + 1
		if c := format[j]; c >= '1' && c <= '9' && j+1 < len(format) {
			decimals = int(c - '0')
			j++
		}
		if format[j] != 't' {
			out.WriteByte(format[i])
			continue
		}
		layout := "15:04:05"
		if decimals > 0 {
			layout += "." + strings.Repeat("0", decimals)
		}
		out.WriteString(now.Format(layout))
		i = j
	}
	return out.String()
}
