package kuberuntime

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStreamingCallsReturnRuntimeURLs(t *testing.T) {
	e := newTestEnv(t)
	e.fake.SetStreamingServer("http://127.0.0.1:4711")
	pod := newPod("web", ctr("main", "sleep", "3600"))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	main := e.running("main")
	ctx := context.Background()

	execReq := &runtimeapi.ExecRequest{ContainerId: main.ID, Cmd: []string{"sh", "-c", "echo hi"}, Stdin: true, Stdout: true, Tty: true}
	exec, err := e.mgr.cri.Exec(ctx, execReq)
	if err != nil {
		t.Fatal(err)
	}
	attach, err := e.mgr.cri.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: main.ID, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	pf, err := e.mgr.cri.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: main.SandboxID, Port: []int32{8080}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{exec.Url, attach.Url, pf.Url} {
		if !strings.HasPrefix(u, "http://127.0.0.1:4711/") {
			t.Errorf("URL %q is not on the runtime's streaming server", u)
		}
	}
	got := e.fake.StreamingRequests()
	if len(got) != 3 {
		t.Fatalf("runtime saw %d streaming requests, want 3", len(got))
	}
	if r := got[0].(*runtimeapi.ExecRequest); !reflect.DeepEqual(r.Cmd, execReq.Cmd) || !r.Tty || !r.Stdin || r.Stderr {
		t.Errorf("exec request reached the runtime as %+v", r)
	}
	if r := got[2].(*runtimeapi.PortForwardRequest); r.PodSandboxId != main.SandboxID || !reflect.DeepEqual(r.Port, []int32{8080}) {
		t.Errorf("port-forward request reached the runtime as %+v", r)
	}
}

func TestStreamingCallsKeepRuntimeErrorCodes(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("main", "sleep", "3600"))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	main := e.running("main")
	e.exit("main", 0)
	ctx := context.Background()

	_, err := e.mgr.cri.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: main.ID, Cmd: []string{"true"}, Stdout: true})
	if grpcstatus.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), main.ID) {
		t.Errorf("exec in an exited container: %v", err)
	}
	_, err = e.mgr.cri.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "nope", Stdout: true})
	if grpcstatus.Code(err) != codes.NotFound {
		t.Errorf("attach to a missing container: %v (code %v)", err, grpcstatus.Code(err))
	}
	e.fake.FailNext("PortForward", grpcstatus.Error(codes.ResourceExhausted, "too many pending requests"))
	_, err = e.mgr.cri.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: main.SandboxID})
	if grpcstatus.Code(err) != codes.ResourceExhausted {
		t.Errorf("port-forward: %v", err)
	}
}

func TestExecSyncReturnsOutputAndExitCode(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("main", "sleep", "3600"))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	main := e.running("main")
	e.fake.SetExecHandler(func(id string, cmd []string) ([]byte, int32, error) {
		return []byte(id + ":" + strings.Join(cmd, " ")), 3, nil
	})
	stdout, _, code, err := e.mgr.cri.ExecSync(context.Background(), main.ID, []string{"ls", "/"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(stdout) != main.ID+":ls /" || code != 3 {
		t.Errorf("ExecSync = %q, %d", stdout, code)
	}
	if execs := e.fake.Execs(); len(execs) != 1 || execs[0].Timeout != 5 {
		t.Errorf("runtime saw execs %+v, want one with a 5s timeout", execs)
	}

	e.exit("main", 0)
	if _, _, _, err := e.mgr.cri.ExecSync(context.Background(), main.ID, []string{"ls"}, 0); err == nil {
		t.Error("ExecSync in an exited container succeeded")
	}
}
