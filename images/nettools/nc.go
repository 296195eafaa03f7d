package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

type ncOptions struct {
	udp     bool
	timeout time.Duration // -w: connect timeout, and how long to wait for a UDP answer
	address string
}

func parseNC(args []string) (ncOptions, error) {
	o := ncOptions{timeout: 0}
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-u":
			o.udp = true
		case "-w":
			if i+1 >= len(args) {
				return o, errors.New("-w needs a value")
			}
			i++
			secs, err := strconv.Atoi(args[i])
			if err != nil {
				return o, fmt.Errorf("bad -w value %q", args[i])
			}
			o.timeout = time.Duration(secs) * time.Second
		default:
			if len(a) > 1 && a[0] == '-' {
				return o, fmt.Errorf("unsupported option %s", a)
			}
			rest = append(rest, a)
		}
	}
	if len(rest) != 2 {
		return o, errors.New("usage: nc [-u] [-w SECONDS] HOST PORT")
	}
	o.address = net.JoinHostPort(rest[0], rest[1])
	return o, nil
}

func nc(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseNC(args)
	if err != nil {
		return usageError(stderr, "nc", err)
	}
	if o.udp {
		err = ncUDP(o, stdin, stdout)
	} else {
		err = ncTCP(o, stdin, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nc: %v\n", err)
		return 1
	}
	return 0
}

// ncUDP sends stdin as one datagram and prints the answers that arrive within the timeout
// (one second when -w is not given).
func ncUDP(o ncOptions, stdin io.Reader, stdout io.Writer) error {
	conn, err := net.Dial("udp", o.address)
	if err != nil {
		return err
	}
	defer conn.Close()
	data, err := io.ReadAll(stdin)
	if err != nil {
		return err
	}
	if _, err := conn.Write(data); err != nil {
		return err
	}
	wait := o.timeout
	if wait == 0 {
		wait = time.Second
	}
	buf := make([]byte, 64<<10)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := stdout.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				return nil // no more answers
			}
			return err
		}
	}
}

// ncTCP copies stdin to the connection, closes its sending side, and prints what comes back.
func ncTCP(o ncOptions, stdin io.Reader, stdout io.Writer) error {
	conn, err := net.DialTimeout("tcp", o.address, o.timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := io.Copy(conn, stdin); err != nil {
		return err
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
	_, err = io.Copy(stdout, conn)
	return err
}
