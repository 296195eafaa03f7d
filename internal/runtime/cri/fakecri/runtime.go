package fakecri

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version reports the runtime name and version SetVersion set, by default fakecri 1.0.0.
func (f *Fake) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name, version := "fakecri", "1.0.0"
	if f.version != nil {
		name, version = f.version[0], f.version[1]
	}
	return &runtimeapi.VersionResponse{
		Version: "0.1.0", RuntimeName: name, RuntimeVersion: version, RuntimeApiVersion: "v1",
	}, nil
}

// SetVersion makes Version report another runtime ("containerd", "v2.4.2").
func (f *Fake) SetVersion(name, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version = &[2]string{name, version}
}

// Status reports the conditions set with SetCondition.
func (f *Fake) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &runtimeapi.RuntimeStatus{}
	for _, typ := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		cond := &runtimeapi.RuntimeCondition{Type: typ, Status: f.conditions[typ]}
		if !cond.Status {
			cond.Reason, cond.Message = "FakeNotReady", typ+" is false"
		}
		st.Conditions = append(st.Conditions, cond)
	}
	resp := &runtimeapi.StatusResponse{Status: st}
	if f.reported != nil {
		resp.RuntimeHandlers, resp.Features = f.reported.RuntimeHandlers, f.reported.Features
	}
	return resp, nil
}

// SetCgroupDriver makes RuntimeConfig report driver; until then it answers Unimplemented, as
// containerd before 1.7 does.
func (f *Fake) SetCgroupDriver(driver runtimeapi.CgroupDriver) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cgroupDriver = &driver
}

// RuntimeConfig reports the cgroup driver SetCgroupDriver set.
func (f *Fake) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cgroupDriver == nil {
		return nil, status.Error(codes.Unimplemented, "unknown method RuntimeConfig for service runtime.v1.RuntimeService")
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: *f.cgroupDriver}}, nil
}

// RunPodSandbox creates a ready sandbox; non-host-network sandboxes get a 10.85.0.x IP.
func (f *Fake) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	if cfg.GetMetadata().GetUid() == "" || cfg.GetMetadata().GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox metadata name and uid are required")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if h := req.GetRuntimeHandler(); h != "" && !f.handlers[h] {
		return nil, status.Errorf(codes.Unknown, "failed to get sandbox runtime: no runtime for %q is configured", h)
	}
	for _, s := range f.sandboxes {
		m := s.Config.GetMetadata()
		if m.GetUid() == cfg.Metadata.Uid && m.GetAttempt() == cfg.Metadata.Attempt && m.GetName() == cfg.Metadata.Name {
			return nil, status.Errorf(codes.AlreadyExists, "sandbox name for attempt %d is reserved by %s", m.GetAttempt(), s.ID)
		}
	}
	s := &Sandbox{
		ID:        f.newID("sb"),
		Config:    cloneSandboxConfig(cfg),
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: f.now(),
		Handler:   req.GetRuntimeHandler(),
		HostNet:   cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
	if !s.HostNet {
		s.IP = fmt.Sprintf("10.85.%d.%d", f.nextIP/250, f.nextIP%250+2)
		f.nextIP++
	}
	f.sandboxes[s.ID] = s
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: s.ID}, nil
}

// StopPodSandbox ends the sandbox's containers and marks it not ready. Idempotent.
func (f *Fake) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("sandbox", req.PodSandboxId)
	}
	f.stopSandboxLocked(s)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes a stopped sandbox and its containers; a missing one is not an error.
func (f *Fake) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[req.PodSandboxId]
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not stopped", s.ID)
	}
	for id, c := range f.containers {
		if c.SandboxID == s.ID {
			delete(f.containers, id)
		}
	}
	delete(f.sandboxes, s.ID)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus reports one sandbox.
func (f *Fake) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("sandbox", req.PodSandboxId)
	}
	mode := runtimeapi.NamespaceMode_POD
	if s.HostNet {
		mode = runtimeapi.NamespaceMode_NODE
	}
	st := &runtimeapi.PodSandboxStatus{
		Id:          s.ID,
		Metadata:    s.Config.Metadata,
		State:       s.State,
		CreatedAt:   s.CreatedAt.UnixNano(),
		Network:     &runtimeapi.PodSandboxNetworkStatus{Ip: s.IP},
		Linux:       &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: mode}}},
		Labels:      s.Config.Labels,
		Annotations: s.Config.Annotations,
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

// ListPodSandbox lists sandboxes matching the filter.
func (f *Fake) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	filter := req.GetFilter()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, s := range f.sandboxes {
		if filter.GetId() != "" && filter.GetId() != s.ID {
			continue
		}
		if filter.GetState() != nil && filter.GetState().State != s.State {
			continue
		}
		if !labelsMatch(s.Config.Labels, filter.GetLabelSelector()) {
			continue
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id: s.ID, Metadata: s.Config.Metadata, State: s.State, CreatedAt: s.CreatedAt.UnixNano(),
			Labels: s.Config.Labels, Annotations: s.Config.Annotations,
		})
	}
	return resp, nil
}

// CreateContainer creates a container in a ready sandbox from a present image.
func (f *Fake) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("sandbox", req.PodSandboxId)
	}
	if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", s.ID)
	}
	img := f.findImageLocked(cfg.GetImage().GetImage())
	if img == nil {
		return nil, status.Errorf(codes.NotFound, "image %q not found", cfg.GetImage().GetImage())
	}
	for _, c := range f.containers {
		if c.SandboxID == s.ID && c.Config.Metadata.Name == cfg.GetMetadata().GetName() &&
			c.Config.Metadata.Attempt == cfg.GetMetadata().GetAttempt() {
			return nil, status.Errorf(codes.AlreadyExists, "container name %q attempt %d is reserved by %s",
				c.Config.Metadata.Name, c.Config.Metadata.Attempt, c.ID)
		}
	}
	c := &Container{
		ID:          f.newID("ctr"),
		SandboxID:   s.ID,
		Config:      cloneContainerConfig(cfg),
		State:       runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt:   f.now(),
		ImageRef:    img.Id,
		StopTimeout: -1,
	}
	if cfg.GetLogPath() != "" && s.Config.LogDirectory != "" {
		c.LogPath = filepath.Join(s.Config.LogDirectory, cfg.GetLogPath())
	}
	f.containers[c.ID] = c
	return &runtimeapi.CreateContainerResponse{ContainerId: c.ID}, nil
}

// StartContainer starts a created container; like containerd it opens the log file, which
// fails when the log directory is missing.
func (f *Fake) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not in created state", c.ID)
	}
	if c.LogPath != "" {
		lf, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return nil, status.Errorf(codes.Unknown, "failed to create container loggers: %v", err)
		}
		lf.Close()
	}
	c.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.StartedAt = f.now()
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer makes a running container exit with 137 and records the timeout. Idempotent.
func (f *Fake) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	slow := f.stopIgnoresTerm
	f.mu.Unlock()
	if slow {
		time.Sleep(time.Duration(req.Timeout) * time.Second)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	c.StopTimeout = req.Timeout
	switch c.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_UNKNOWN:
		f.exitLocked(c, 137)
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.FinishedAt = f.now()
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer deletes a container (stopping it first, like the CRI asks); a missing one is
// not an error.
func (f *Fake) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, req.ContainerId)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ListContainers lists containers matching the filter.
func (f *Fake) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	filter := req.GetFilter()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range f.containers {
		if filter.GetId() != "" && filter.GetId() != c.ID {
			continue
		}
		if filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.SandboxID {
			continue
		}
		if filter.GetState() != nil && filter.GetState().State != c.State {
			continue
		}
		if !labelsMatch(c.Config.Labels, filter.GetLabelSelector()) {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id: c.ID, PodSandboxId: c.SandboxID, Metadata: c.Config.Metadata,
			Image: c.Config.Image, ImageRef: c.ImageRef, State: c.State, CreatedAt: c.CreatedAt.UnixNano(),
			Labels: c.Config.Labels, Annotations: c.Config.Annotations,
		})
	}
	return resp, nil
}

// ContainerStatus reports one container, including its mounts and log path.
func (f *Fake) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	st := &runtimeapi.ContainerStatus{
		Id: c.ID, Metadata: c.Config.Metadata, State: c.State,
		CreatedAt: c.CreatedAt.UnixNano(), StartedAt: unixNano(c.StartedAt), FinishedAt: unixNano(c.FinishedAt),
		ExitCode: c.ExitCode, Image: c.Config.Image, ImageRef: c.ImageRef, Reason: c.Reason,
		Labels: c.Config.Labels, Annotations: c.Config.Annotations, Mounts: c.Config.Mounts, LogPath: c.LogPath,
		StopSignal: c.Config.StopSignal, // the config's, as containerd 2.1 reports it (RUNTIME_DEFAULT when unset)
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// ExecSync runs the exec handler against a running container.
func (f *Fake) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	f.mu.Lock()
	c, ok := f.containers[req.ContainerId]
	running := ok && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING
	f.execs = append(f.execs, Exec{ContainerID: req.ContainerId, Cmd: append([]string(nil), req.Cmd...), Timeout: req.Timeout})
	h := f.execHandler
	f.mu.Unlock()
	if !running {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", req.ContainerId)
	}
	if h == nil {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	out, code, err := h(req.ContainerId, req.Cmd)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: out, ExitCode: code}, nil
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func sortByCreation[T any](items []T, key func(T) (time.Time, string)) {
	sort.Slice(items, func(i, j int) bool {
		ti, idi := key(items[i])
		tj, idj := key(items[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return idi < idj
	})
}

// The CRI types are gogo-generated; a marshal round trip is their deep copy.
func cloneSandboxConfig(c *runtimeapi.PodSandboxConfig) *runtimeapi.PodSandboxConfig {
	out := &runtimeapi.PodSandboxConfig{}
	if b, err := c.Marshal(); err == nil {
		_ = out.Unmarshal(b)
	}
	return out
}

func cloneContainerConfig(c *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
	out := &runtimeapi.ContainerConfig{}
	if b, err := c.Marshal(); err == nil {
		_ = out.Unmarshal(b)
	}
	return out
}
