package config

import (
	"strings"
	"testing"
)

func TestAnonymousAlwaysAllowBeyondLoopbackIsRefused(t *testing.T) {
	open := []string{"--anonymous-auth=true", "--authorization-mode=AlwaysAllow", "--authentication-token-webhook=false"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default address (all)", nil},
		{"0.0.0.0", []string{"--address=0.0.0.0"}},
		{"::", []string{"--address=::"}},
		{"a host IP", []string{"--address=192.0.2.7"}},
	} {
		_, err := complete(t, append(open, tc.args...)...)
		if err == nil {
			t.Errorf("%s: anonymous + AlwaysAllow accepted", tc.name)
			continue
		}
		for _, want := range []string{"authentication.anonymous.enabled", "authorization.mode AlwaysAllow", "address ", "--allow-insecure-anonymous-api", "--address=127.0.0.1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, want)
			}
		}
	}
	_, err := complete(t, open...)
	if !strings.Contains(err.Error(), "address 0.0.0.0 ") || !strings.Contains(err.Error(), "port 10250") {
		t.Errorf("error %q does not name the default address and port", err)
	}
}

func TestAnonymousAlwaysAllowAllowedOnLoopbackOrWhenAsked(t *testing.T) {
	open := []string{"--anonymous-auth=true", "--authorization-mode=AlwaysAllow", "--authentication-token-webhook=false"}
	for _, args := range [][]string{
		append(open, "--address=127.0.0.1"),
		append(open, "--address=::1"),
		append(open, "--address=0.0.0.0", "--allow-insecure-anonymous-api"),
		append(open, "--enable-server=false"),
		// Either half alone is not the open door.
		{"--anonymous-auth=true", "--authentication-token-webhook=false"},
		{"--authorization-mode=AlwaysAllow", "--authentication-token-webhook=false"},
	} {
		cfg := mustComplete(t, args...)
		if cfg.Kubelet.Authorization.Mode == "" {
			t.Errorf("%v: no authorization mode", args)
		}
	}
	if cfg := mustComplete(t, append(open, "--address=0.0.0.0", "--allow-insecure-anonymous-api")...); !cfg.AllowInsecureAnonymousAPI {
		t.Error("--allow-insecure-anonymous-api not carried into the Config")
	}
}

func TestAnonymousAlwaysAllowFromConfigFile(t *testing.T) {
	path := writeConfig(t, "kubelet.yaml", `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
`)
	if _, err := complete(t, "--config="+path); err == nil || !strings.Contains(err.Error(), "authentication.anonymous.enabled") {
		t.Errorf("file with anonymous + AlwaysAllow on 0.0.0.0: %v, want refused", err)
	}
	mustComplete(t, "--config="+path, "--address=127.0.0.1")
}

func TestStreamingAuthorizationVerb(t *testing.T) {
	if cfg := mustComplete(t); cfg.StreamingVerbFromMethod {
		t.Error("default: streaming verb from method, want create")
	}
	if cfg := mustComplete(t, "--streaming-authorization-verb=create"); cfg.StreamingVerbFromMethod {
		t.Error("create: streaming verb from method")
	}
	if cfg := mustComplete(t, "--streaming-authorization-verb=http-method"); !cfg.StreamingVerbFromMethod {
		t.Error("http-method: not from method")
	}
	_, err := complete(t, "--streaming-authorization-verb=get")
	if err == nil || !strings.Contains(err.Error(), "--streaming-authorization-verb") || !strings.Contains(err.Error(), `"http-method"`) {
		t.Errorf("bad value: %v", err)
	}
}
