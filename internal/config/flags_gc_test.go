package config

import (
	"strings"
	"testing"
	"time"
)

func TestContainerGCFlags(t *testing.T) {
	if cfg := mustComplete(t); cfg.ContainerGC != DefaultContainerGCPolicy {
		t.Errorf("default policy %+v", cfg.ContainerGC)
	}
	cfg := mustComplete(t, "--minimum-container-ttl-duration=10s", "--maximum-dead-containers-per-container=3",
		"--maximum-dead-containers=100", "--pod-infra-container-image=example.com/pause:1")
	want := ContainerGCPolicy{MinAge: 10 * time.Second, MaxPerPodContainer: 3, MaxContainers: 100}
	if cfg.ContainerGC != want {
		t.Errorf("policy %+v, want %+v", cfg.ContainerGC, want)
	}
	if cfg.PodInfraContainerImage != "example.com/pause:1" {
		t.Errorf("pod infra image %q", cfg.PodInfraContainerImage)
	}
	_, err := complete(t, "--minimum-container-ttl-duration=-1s")
	if err == nil || !strings.Contains(err.Error(), "--minimum-container-ttl-duration") {
		t.Errorf("negative minimum age: err = %v", err)
	}
}
