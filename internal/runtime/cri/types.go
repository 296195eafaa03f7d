package cri

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// The CRI messages other packages read or fill, named here so that only this package (and
// the pod runtime that builds requests) imports the CRI API. Aliases rather than own types:
// the values pass through unchanged (stats read usage field by field, streaming forwards
// requests as the client sent them), and a copy would be a second definition of each message
// to keep in step with the API.
type (
	ContainerStats      = runtimeapi.ContainerStats
	MemoryUsage         = runtimeapi.MemoryUsage
	UInt64Value         = runtimeapi.UInt64Value
	FilesystemUsage     = runtimeapi.FilesystemUsage
	ImageFsInfoResponse = runtimeapi.ImageFsInfoResponse

	ExecRequest         = runtimeapi.ExecRequest
	ExecResponse        = runtimeapi.ExecResponse
	AttachRequest       = runtimeapi.AttachRequest
	AttachResponse      = runtimeapi.AttachResponse
	PortForwardRequest  = runtimeapi.PortForwardRequest
	PortForwardResponse = runtimeapi.PortForwardResponse

	AuthConfig = runtimeapi.AuthConfig
	Image      = runtimeapi.Image
	ImageSpec  = runtimeapi.ImageSpec

	// PodSandboxConfig goes with an image pull, as upstream sends it.
	PodSandboxConfig = runtimeapi.PodSandboxConfig

	Device = runtimeapi.Device
	Mount  = runtimeapi.Mount

	// LinuxContainerResources is what UpdateContainerResources sets (the CPU manager's cpusets).
	LinuxContainerResources = runtimeapi.LinuxContainerResources

	// LogStreamType names a container log line's stream (stdout, stderr).
	LogStreamType = runtimeapi.LogStreamType
)

// The streams and tags of the CRI container log format.
const (
	Stdout        = runtimeapi.Stdout
	Stderr        = runtimeapi.Stderr
	LogTagFull    = runtimeapi.LogTagFull
	LogTagPartial = runtimeapi.LogTagPartial
)
