package config

import (
	"net"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// checkAnonymousAPI refuses an HTTPS API that lets anonymous requests do anything
// (anonymous authentication with AlwaysAllow) on an address others can reach: anyone who
// reaches the port could exec into every container. Loopback is the operator's own machine;
// beyond it the operator must say so with --allow-insecure-anonymous-api.
func (v *validator) checkAnonymousAPI(cfg *Config) {
	kc := cfg.Kubelet
	if cfg.AllowInsecureAnonymousAPI || !ptr.Deref(kc.EnableServer, false) || !ptr.Deref(kc.Authentication.Anonymous.Enabled, false) ||
		kc.Authorization.Mode != kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow {
		return
	}
	ip := net.ParseIP(kc.Address)
	if ip != nil && ip.IsLoopback() {
		return
	}
	address := kc.Address
	if address == "" {
		address = "0.0.0.0"
	}
	v.add("authentication.anonymous.enabled",
		"true with authorization.mode AlwaysAllow on address %s (not loopback) lets anyone who reaches port %d read every pod and run commands in every container. "+
			"Bind the API to loopback (address: 127.0.0.1, --address=127.0.0.1), turn anonymous access off (--anonymous-auth=false), "+
			"or authorize with the API server (authorization.mode: Webhook, with --kubeconfig); to run it this way anyway, pass --allow-insecure-anonymous-api",
		address, kc.Port)
}
