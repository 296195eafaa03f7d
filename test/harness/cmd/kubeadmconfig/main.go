// Command kubeadmconfig writes the kubelet configuration kubeadm v1.33 writes on a node for a
// default cluster: /var/lib/kubelet/config.yaml and /var/lib/kubelet/kubeadm-flags.env, made
// by kubeadm's own code (the same phases `kubeadm init` runs), into -dir. internal/config's
// corpus test starts nodelet's configuration on them.
//
//	go run ./cmd/kubeadmconfig -dir ../../internal/config/testdata/corpus/kubeadm-v1.33
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	kubeletphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubelet"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
)

func main() {
	dir := flag.String("dir", "", "directory to write config.yaml and kubeadm-flags.env to")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "kubeadmconfig:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	cfg, err := configutil.DefaultedStaticInitConfiguration()
	if err != nil {
		return err
	}
	if err := kubeletphase.WriteConfigToDisk(&cfg.ClusterConfiguration, dir, "", io.Discard); err != nil {
		return err
	}
	return kubeletphase.WriteKubeletDynamicEnvFile(&cfg.ClusterConfiguration, &cfg.NodeRegistration, false, dir)
}
