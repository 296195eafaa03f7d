// Command testhelper is the workload image used by nodelet's end-to-end tests.
// One binary, several behaviours chosen by the first argument:
//
//	serve   --port 8080 [--term-delay 0s]  HTTP: / hostname, /healthz, /ready, /exit?code=N, /env, /echo?msg=
//	exit    --code N --after 2s             print a line, wait, exit N
//	sleep   [--term-delay 0s]               block until SIGTERM, print "got SIGTERM", exit 0
//	log     --lines N --interval 100ms      numbered lines, alternating stdout/stderr (N<=0: forever)
//	termmsg --msg X                          write X to /dev/termination-log, exit 1
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// readyGateFile makes /ready fail while it exists, so tests can flip readiness.
const readyGateFile = "/tmp/notready"

func main() {
	if len(os.Args) < 2 {
		fatalf("usage: testhelper serve|exit|sleep|log|termmsg [flags]")
	}
	mode, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	switch mode {
	case "serve":
		port := fs.Int("port", 8080, "listen port")
		termDelay := fs.Duration("term-delay", 0, "delay between SIGTERM and exit")
		fs.Parse(args)
		go exitOnSIGTERM(*termDelay)
		serve(*port)
	case "exit":
		code := fs.Int("code", 0, "exit code")
		after := fs.Duration("after", 0, "delay before exiting")
		fs.Parse(args)
		fmt.Printf("exiting with code %d after %s\n", *code, *after)
		time.Sleep(*after)
		os.Exit(*code)
	case "sleep":
		termDelay := fs.Duration("term-delay", 0, "delay between SIGTERM and exit")
		fs.Parse(args)
		fmt.Println("sleeping until SIGTERM")
		exitOnSIGTERM(*termDelay)
	case "log":
		lines := fs.Int("lines", 10, "number of lines (<=0: forever)")
		interval := fs.Duration("interval", 100*time.Millisecond, "delay between lines")
		fs.Parse(args)
		logLines(*lines, *interval)
	case "termmsg":
		msg := fs.String("msg", "", "termination message")
		fs.Parse(args)
		if err := os.WriteFile("/dev/termination-log", []byte(*msg), 0o644); err != nil {
			fatalf("write termination log: %v", err)
		}
		os.Exit(1)
	default:
		fatalf("unknown mode %q", mode)
	}
}

// exitOnSIGTERM blocks until SIGTERM or SIGINT, then exits 0 after delay.
func exitOnSIGTERM(delay time.Duration) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	sig := <-sigs
	if sig == syscall.SIGTERM {
		fmt.Println("got SIGTERM")
	} else {
		fmt.Println("got SIGINT")
	}
	time.Sleep(delay)
	os.Exit(0)
}

func serve(port int) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		host, _ := os.Hostname()
		fmt.Fprintln(w, host)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(readyGateFile); err == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			http.Error(w, "code must be an integer", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "exiting with code %d\n", code)
		w.(http.Flusher).Flush()
		fmt.Printf("exiting with code %d on request\n", code)
		// Exit after the handler returns so the client receives the reply.
		go func() { time.Sleep(100 * time.Millisecond); os.Exit(code) }()
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Fprintln(w, kv)
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, r.URL.Query().Get("msg"))
	})
	fmt.Printf("serving on :%d\n", port)
	if err := http.ListenAndServe(":"+strconv.Itoa(port), mux); err != nil {
		fatalf("serve: %v", err)
	}
}

func logLines(lines int, interval time.Duration) {
	for i := 1; lines <= 0 || i <= lines; i++ {
		if i%2 == 1 {
			fmt.Fprintf(os.Stdout, "line %d stdout\n", i)
		} else {
			fmt.Fprintf(os.Stderr, "line %d stderr\n", i)
		}
		if lines <= 0 || i < lines {
			time.Sleep(interval)
		}
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testhelper: "+format+"\n", args...)
	os.Exit(2)
}
