package main

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes DIR/<stem>.kubeconfig for the client cert pki/<stem>.crt, with the
// CA and the key embedded so the file can be copied anywhere on this host.
func writeKubeconfig(dir, stem, server string) error {
	pki := filepath.Join(dir, "pki")
	caData, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	certData, err := os.ReadFile(filepath.Join(pki, stem+".crt"))
	if err != nil {
		return err
	}
	keyData, err := os.ReadFile(filepath.Join(pki, stem+".key"))
	if err != nil {
		return err
	}
	const name = "nodelet-cp"
	config := clientcmdapi.NewConfig()
	config.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	config.AuthInfos[stem] = &clientcmdapi.AuthInfo{ClientCertificateData: certData, ClientKeyData: keyData}
	config.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: stem}
	config.CurrentContext = name
	return clientcmd.WriteToFile(*config, filepath.Join(dir, stem+".kubeconfig"))
}
