package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/server/healthz"
	"github.com/nodelet/nodelet/internal/testutil"
)

// The node page on its own port (--node-ui-port) shows the standalone node as it would
// register, its pods from the sync loop and the events the recorder sent.
func TestNodePageOnItsOwnPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	fake, dir := startNode(t, fmt.Sprintf("--node-ui-port=%d", port))
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	base := fmt.Sprintf("http://127.0.0.1:%d/ui/", port)

	var pods struct {
		Pods []struct{ Name, Phase string }
	}
	testutil.Eventually(t, "web Running on the page", func() bool {
		return getJSON(base+"api/pods", &pods) == nil && len(pods.Pods) == 1 && pods.Pods[0].Name == "web-node1" && pods.Pods[0].Phase == "Running"
	})
	var node struct {
		Name, Mode, Runtime string
		Resources           []struct{ Name string }
		Conditions          []struct{ Type, Status string }
	}
	if err := getJSON(base+"api/node", &node); err != nil {
		t.Fatal(err)
	}
	if node.Name != "node1" || node.Mode != "standalone" || node.Runtime != "fakecri://1.0.0" || len(node.Resources) == 0 || len(node.Conditions) != 4 {
		t.Errorf("node %+v", node)
	}
	var events struct {
		Events []struct{ Reason, Name string }
	}
	testutil.Eventually(t, "the container's Started event on the page", func() bool {
		if getJSON(base+"api/events", &events) != nil {
			return false
		}
		for _, e := range events.Events {
			if e.Reason == "Started" && e.Name == "web-node1" {
				return true
			}
		}
		return false
	})
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func TestChecksHealthNamesTheFirstFailingCheck(t *testing.T) {
	health := checksHealth(map[string]healthz.Check{
		"syncloop": func() error { return nil },
		"pleg":     func() error { return errors.New("relist stalled") },
	})
	if err := health(); err == nil || !strings.Contains(err.Error(), "pleg: relist stalled") {
		t.Errorf("health = %v", err)
	}
	if err := checksHealth(map[string]healthz.Check{"syncloop": func() error { return nil }})(); err != nil {
		t.Errorf("all healthy: %v", err)
	}
}
