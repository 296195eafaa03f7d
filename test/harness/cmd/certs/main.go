// Command certs makes the PKI and kubeconfigs of the local development control plane
// (hack/control-plane.sh). Every step is idempotent: existing, still-valid files are kept.
//
//	certs init --dir /var/lib/nodelet-cp --host-ip 192.0.2.2
//	certs node --dir /var/lib/nodelet-cp --name mynode
package main

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

const usage = "usage: certs init|node [--dir DIR] [--server URL] [--host-ip IP] [--name NODE]"

var (
	serverAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
)

func main() {
	if len(os.Args) < 2 {
		fail(usage)
	}
	flags := flag.NewFlagSet("certs", flag.ExitOnError)
	dir := flags.String("dir", "/var/lib/nodelet-cp", "state directory; certificates go to DIR/pki")
	server := flags.String("server", "https://127.0.0.1:6443", "API server URL written into kubeconfigs")
	hostIP := flags.String("host-ip", "", "this host's primary IPv4, added to the serving cert")
	nodeName := flags.String("name", "", "node name (node subcommand)")
	_ = flags.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "init":
		err = initControlPlane(*dir, *server, *hostIP)
	case "node":
		err = initNode(*dir, *server, *nodeName)
	default:
		fail(usage)
	}
	if err != nil {
		fail("certs: " + err.Error())
	}
}

// initControlPlane makes the cluster CA, the API server's serving and kubelet-client certs,
// the service-account key, the front-proxy CA and client (without them every component logs
// a missing requestheader CA bundle, and aggregated APIs cannot work) and the
// admin/controller-manager/scheduler kubeconfigs.
func initControlPlane(dir, server, hostIP string) error {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	ca, err := loadOrCreateCA(pki, "ca", "nodelet-cp-ca")
	if err != nil {
		return err
	}
	frontProxyCA, err := loadOrCreateCA(pki, "front-proxy-ca", "nodelet-cp-front-proxy-ca")
	if err != nil {
		return err
	}
	if err := frontProxyCA.ensureLeaf(pki, client("front-proxy-client", "front-proxy-client")); err != nil {
		return err
	}
	if err := ensureServiceAccountKey(pki); err != nil {
		return err
	}
	serving, err := apiserverServing(hostIP)
	if err != nil {
		return err
	}
	leaves := []leafSpec{
		serving,
		client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
		client("admin", "kubernetes-admin", "system:masters"),
		client("controller-manager", "system:kube-controller-manager"),
		client("scheduler", "system:kube-scheduler"),
	}
	for _, spec := range leaves {
		if err := ca.ensureLeaf(pki, spec); err != nil {
			return err
		}
	}
	for _, name := range []string{"admin", "controller-manager", "scheduler"} {
		if err := writeKubeconfig(dir, name, server); err != nil {
			return err
		}
	}
	return nil
}

// initNode issues the client cert of node NAME and writes DIR/node-NAME.kubeconfig.
func initNode(dir, server, name string) error {
	if name == "" {
		return fmt.Errorf("node: --name is required")
	}
	pki := filepath.Join(dir, "pki")
	ca, err := loadOrCreateCA(pki, "ca", "nodelet-cp-ca")
	if err != nil {
		return err
	}
	stem := "node-" + name
	if err := ca.ensureLeaf(pki, client(stem, "system:node:"+name, "system:nodes")); err != nil {
		return err
	}
	return writeKubeconfig(dir, stem, server)
}

func apiserverServing(hostIP string) (leafSpec, error) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	if hostIP != "" {
		ip := net.ParseIP(hostIP)
		if ip == nil {
			return leafSpec{}, fmt.Errorf("bad --host-ip %q", hostIP)
		}
		ips = append(ips, ip)
	}
	return leafSpec{
		name:    "apiserver",
		subject: pkix.Name{CommonName: "kube-apiserver"},
		usages:  serverAuth,
		dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		ips: ips,
	}, nil
}

func client(stem, commonName string, groups ...string) leafSpec {
	return leafSpec{
		name:    stem,
		subject: pkix.Name{CommonName: commonName, Organization: groups},
		usages:  clientAuth,
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}
