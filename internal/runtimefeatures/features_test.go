package runtimefeatures

import "testing"

// As upstream: before any report, and on a runtime listing no handlers, nothing is supported;
// a handler the runtime does not list is an error for user namespaces.
func TestStoreAnswersPerHandler(t *testing.T) {
	s := &Store{}
	if ok, err := s.UserNamespaces(""); ok || err != nil || s.RecursiveReadOnlyMounts("") || s.SupplementalGroupsPolicy() || s.Observed() {
		t.Fatalf("empty store: userns %v %v", ok, err)
	}
	s.Observe(Report{})
	if ok, err := s.UserNamespaces("runc"); ok || err != nil || !s.Observed() {
		t.Fatalf("no handlers listed: %v %v", ok, err)
	}
	s.Observe(Report{SupplementalGroupsPolicy: true, Handlers: []Handler{
		{Name: "", UserNamespaces: true}, {Name: "kata", RecursiveReadOnlyMounts: true},
	}})
	if ok, err := s.UserNamespaces(""); !ok || err != nil {
		t.Fatalf("default handler: %v %v", ok, err)
	}
	if ok, _ := s.UserNamespaces("kata"); ok || !s.RecursiveReadOnlyMounts("kata") || s.RecursiveReadOnlyMounts("") {
		t.Fatal("per-handler features mixed up")
	}
	if _, err := s.UserNamespaces("gone"); err == nil || err.Error() != `the handler "gone" is not known` {
		t.Fatalf("unknown handler: %v", err)
	}
	if !s.SupplementalGroupsPolicy() || len(s.Handlers()) != 2 {
		t.Fatal("runtime-wide feature or handler list lost")
	}
}
