package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

func TestCgroupDriverFromCRI(t *testing.T) {
	saved := cgroupDriverPause
	cgroupDriverPause = time.Millisecond
	t.Cleanup(func() { cgroupDriverPause = saved })
	unavailable := status.Error(codes.Unavailable, "starting")
	tests := []struct {
		name    string
		setup   func(*fakecri.Fake)
		want    string
		wantErr string
		calls   int
	}{
		{name: "the runtime's driver wins", want: "systemd", calls: 1,
			setup: func(f *fakecri.Fake) { f.SetCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD) }},
		{name: "cgroupfs", want: "cgroupfs", calls: 1,
			setup: func(f *fakecri.Fake) { f.SetCgroupDriver(runtimeapi.CgroupDriver_CGROUPFS) }},
		{name: "Unimplemented (containerd 1.6) keeps the config's", want: "cgroupfs", calls: 1,
			setup: func(*fakecri.Fake) {}},
		{name: "a passing error is asked again", want: "systemd", calls: 3,
			setup: func(f *fakecri.Fake) {
				f.SetCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD)
				f.FailNext("RuntimeConfig", unavailable)
				f.FailNext("RuntimeConfig", unavailable)
			}},
		{name: "three errors stop start-up", wantErr: "starting", calls: 3,
			setup: func(f *fakecri.Fake) {
				for range 3 {
					f.FailNext("RuntimeConfig", unavailable)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, endpoint := fakecri.Start(t)
			tt.setup(fake)
			client, err := cri.Connect(endpoint, "", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			kc := &kubeletconfigv1beta1.KubeletConfiguration{CgroupDriver: "cgroupfs"}
			err = cgroupDriverFromCRI(context.Background(), client, kc)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case kc.CgroupDriver != tt.want:
				t.Fatalf("cgroupDriver %q, want %q", kc.CgroupDriver, tt.want)
			}
			if n := fake.CountCalls("RuntimeConfig"); n != tt.calls {
				t.Errorf("RuntimeConfig called %d times, want %d", n, tt.calls)
			}
		})
	}
}
