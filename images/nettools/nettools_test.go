package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCurlBodyStatusAndFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "netserver-0")
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	var out, errOut bytes.Buffer
	if code := curl([]string{"-g", "-q", "-s", "--max-time", "15", "--connect-timeout", "1", "http://" + host + "/hostName"}, &out, &errOut); code != 0 || out.String() != "netserver-0" {
		t.Fatalf("GET: code %d out %q err %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := curl([]string{"-g", "-q", "-s", "-o", os.DevNull, "-w", "%{http_code}", host + "/missing"}, &out, &errOut); code != 0 || out.String() != "404" {
		t.Fatalf("-w http_code: code %d out %q", code, out.String())
	}
	body := filepath.Join(t.TempDir(), "body")
	out.Reset()
	if code := curl([]string{"-i", "-s", "-o", body, srv.URL}, &out, &errOut); code != 0 {
		t.Fatalf("-i -o: code %d", code)
	}
	if data, _ := os.ReadFile(body); !bytes.HasPrefix(data, []byte("HTTP/1.1 200 OK")) || !bytes.HasSuffix(data, []byte("netserver-0")) {
		t.Fatalf("-i output %q", data)
	}
	// Nothing listens on a port we just closed: connection refused is curl's exit code 7.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if code := curl([]string{"-s", "--connect-timeout", "1", "http://" + addr + "/"}, &out, &errOut); code != curlConnectFailed {
		t.Fatalf("refused connection: code %d, want %d", code, curlConnectFailed)
	}
	if code := curl([]string{"--bogus", srv.URL}, &out, &errOut); code != 2 {
		t.Fatalf("unknown option: code %d, want 2", code)
	}
}

func TestNCUDPAndTCP(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	go func() {
		buf := make([]byte, 100)
		n, from, err := udp.ReadFrom(buf)
		if err == nil && strings.TrimSpace(string(buf[:n])) == "hostName" {
			udp.WriteTo([]byte("netserver-1"), from)
		}
	}()
	host, port, _ := net.SplitHostPort(udp.LocalAddr().String())
	var out, errOut bytes.Buffer
	if code := nc([]string{"-w", "1", "-u", host, port}, strings.NewReader("hostName\n"), &out, &errOut); code != 0 || out.String() != "netserver-1" {
		t.Fatalf("udp: code %d out %q err %q", code, out.String(), errOut.String())
	}

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		c, err := tcp.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 100)
		n, _ := c.Read(buf)
		c.Write(bytes.ToUpper(buf[:n]))
	}()
	host, port, _ = net.SplitHostPort(tcp.Addr().String())
	out.Reset()
	if code := nc([]string{"-w", "1", host, port}, strings.NewReader("echo"), &out, &errOut); code != 0 || out.String() != "ECHO" {
		t.Fatalf("tcp: code %d out %q err %q", code, out.String(), errOut.String())
	}
}
