package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/internal/cli/explain"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// explainTarget is where the kubelet API is reached: directly, or through the API server.
type explainTarget struct {
	kubeconfig, node      string
	server, token, caFile string
	insecureSkipTLSVerify bool
	stuckAfter            time.Duration
}

func newExplainCommand(stdout io.Writer) *cobra.Command {
	var t explainTarget
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/POD",
		Short: "Show a pod's timeline on this node and what it waits on now",
		Long: `explain reads the pod and its timeline from the kubelet API (/pods and
/debug/pods/NAMESPACE/POD/timeline): directly (--server, default the local 10250, with
--token or a client allowed by the node's authorization), or through the API server's
node proxy (--kubeconfig and --node). It prints the steps as a table and one line saying
what the pod waits on now and for how long, and exits non-zero when it has waited longer
than --stuck-after.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok || ns == "" || name == "" {
				return fmt.Errorf("want NAMESPACE/POD, got %q", args[0])
			}
			return t.run(stdout, ns, name, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringVar(&t.server, "server", "https://127.0.0.1:10250", "The kubelet API to ask.")
	f.StringVar(&t.token, "token", "", "Bearer token for the kubelet API.")
	f.StringVar(&t.caFile, "certificate-authority", "", "CA that signed the kubelet API's serving certificate.")
	f.BoolVar(&t.insecureSkipTLSVerify, "insecure-skip-tls-verify", false, "Do not verify the kubelet API's certificate (nodelet's self-signed one, by default).")
	f.StringVar(&t.kubeconfig, "kubeconfig", "", "Ask through the API server of this kubeconfig (with --node) instead of --server.")
	f.StringVar(&t.node, "node", "", "The node whose kubelet API the API server proxies to (with --kubeconfig).")
	f.DurationVar(&t.stuckAfter, "stuck-after", 5*time.Minute, "Exit non-zero when the pod has waited on the same thing longer than this.")
	return cmd
}

func (t explainTarget) run(out io.Writer, ns, name string, now time.Time) error {
	base, client, err := t.client()
	if err != nil {
		return err
	}
	var pods v1.PodList
	if err := getJSON(client, base+"/pods", t.token, &pods); err != nil {
		return err
	}
	var pod *v1.Pod
	for i := range pods.Items {
		if pods.Items[i].Namespace == ns && pods.Items[i].Name == name {
			pod = &pods.Items[i]
		}
	}
	var tl timeline.Timeline
	tlErr := getJSON(client, base+"/debug/pods/"+ns+"/"+name+"/timeline", t.token, &tl)
	if pod == nil && tlErr != nil {
		return fmt.Errorf("pod %s/%s is not on this node (%v)", ns, name, tlErr)
	}
	if pod == nil {
		pod = &v1.Pod{}
		pod.Namespace, pod.Name, pod.Status.Phase = ns, name, v1.PodUnknown
	}
	fmt.Fprintf(out, "Pod %s/%s (%s)\n\n", ns, name, pod.Status.Phase)
	if tlErr != nil {
		fmt.Fprintf(out, "no timeline: %v\n\n", tlErr)
	} else if err := explain.Table(out, tl); err != nil {
		return err
	}
	v := explain.Explain(pod, tl, now)
	fmt.Fprintf(out, "\nNow: %s\n", v.Line)
	if v.Waiting && v.Since > t.stuckAfter {
		return fmt.Errorf("pod %s/%s is stuck: %s", ns, name, v.Line)
	}
	return nil
}

// client is the base URL of the kubelet API and an HTTP client for it.
func (t explainTarget) client() (string, *http.Client, error) {
	if t.kubeconfig != "" {
		if t.node == "" {
			return "", nil, errors.New("--kubeconfig needs --node: the node whose kubelet API to ask")
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", t.kubeconfig)
		if err != nil {
			return "", nil, err
		}
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return "", nil, err
		}
		return strings.TrimSuffix(cfg.Host, "/") + "/api/v1/nodes/" + t.node + "/proxy", client, nil
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: t.insecureSkipTLSVerify} // only when asked for
	if t.caFile != "" {
		pem, err := os.ReadFile(t.caFile)
		if err != nil {
			return "", nil, err
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		tlsConfig.RootCAs.AppendCertsFromPEM(pem)
	}
	return strings.TrimSuffix(t.server, "/"), &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}, nil
}

func getJSON(client *http.Client, url, token string, into any) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.NewDecoder(resp.Body).Decode(into)
}
