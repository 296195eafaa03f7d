package oom

import (
	"context"
	"io"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

const (
	podKill    = "6,1201,5000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/burstable/pod123/abc,task_memcg=/kubepods/burstable/pod123/abc,task=stress,pid=4242,uid=0"
	systemKill = "6,1202,6000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/db.service,task_memcg=/system.slice/db.service,task=postgres,pid=77,uid=0"
	rootKill   = "6,1203,7000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=hog,pid=9,uid=0"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		record string
		want   Kill
		ok     bool
	}{
		{podKill, Kill{Cgroup: "/kubepods/burstable/pod123/abc", Process: "stress", PID: 4242}, true},
		{rootKill, Kill{Cgroup: "/", Process: "hog", PID: 9}, true},
		{"6,1204,8000,-;Memory cgroup out of memory: Killed process 9 (hog)", Kill{}, false},
		{"4,1,2,-;eth0: link up", Kill{}, false},
	} {
		got, ok := parse(tc.record)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parse(%q) = %+v %v, want %+v %v", tc.record, got, ok, tc.want, tc.ok)
		}
	}
}

func TestOnlyKillsOutsidePodsPostSystemOOM(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	log := strings.Join([]string{podKill, systemKill, "4,1,2,-;noise", rootKill}, "\n") + "\n"
	w := &Watcher{
		Open:       func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(log)), nil },
		PodsCgroup: "/kubepods", Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"},
	}
	if err := w.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Warning SystemOOM System OOM encountered, victim process: postgres, pid: 77",
		"Warning SystemOOM System OOM encountered, victim process: hog, pid: 9",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
}
