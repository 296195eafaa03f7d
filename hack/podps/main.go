// Command podps lists the pods a CRI runtime holds, as nodelet created them: a crictl-free
// view for the demo and for debugging.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///run/nodelet/containerd/containerd.sock", "CRI endpoint")
	flag.Parse()
	if err := list(*endpoint); err != nil {
		fmt.Fprintln(os.Stderr, "podps:", err)
		os.Exit(1)
	}
}

func list(endpoint string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := cri.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sbs, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing sandboxes (is containerd running? `make containerd`): %w", err)
	}
	cs, err := rt.ListContainers(ctx, &cri.ListContainersRequest{})
	if err != nil {
		return err
	}
	bySandbox := map[string][]*cri.Container{}
	for _, c := range cs.Containers {
		bySandbox[c.PodSandboxId] = append(bySandbox[c.PodSandboxId], c)
	}
	sort.Slice(sbs.Items, func(i, j int) bool { return sbs.Items[i].Metadata.Name < sbs.Items[j].Metadata.Name })
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tSANDBOX\tIP\tCONTAINERS\tAGE")
	for _, sb := range sbs.Items {
		st, err := rt.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: sb.Id})
		ip := ""
		if err == nil {
			ip = st.Status.GetNetwork().GetIp()
		}
		state := strings.TrimPrefix(sb.State.String(), "SANDBOX_")
		age := time.Since(time.Unix(0, sb.CreatedAt)).Round(time.Second)
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t%s\n", sb.Metadata.Namespace, sb.Metadata.Name, state, ip, summary(bySandbox[sb.Id]), age)
	}
	return w.Flush()
}

// summary shows each container's newest instance: name=state(restarts).
func summary(cs []*cri.Container) string {
	newest := map[string]*cri.Container{}
	for _, c := range cs {
		if cur, ok := newest[c.Metadata.Name]; !ok || c.Metadata.Attempt > cur.Metadata.Attempt {
			newest[c.Metadata.Name] = c
		}
	}
	names := make([]string, 0, len(newest))
	for n := range newest {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		c := newest[n]
		state := strings.ToLower(strings.TrimPrefix(c.State.String(), "CONTAINER_"))
		parts = append(parts, fmt.Sprintf("%s=%s(restarts:%d)", n, state, c.Metadata.Attempt))
	}
	return strings.Join(parts, " ")
}
