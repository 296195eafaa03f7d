package runtimefeatures

import "testing"

// As upstream: before any report, and on a runtime listing no handlers, nothing is supported;
// a handler the runtime does not list is an error for user namespaces.
func TestStoreAnswersPerHandler(t *testing.T) {
	s := &Store{}
	if ok, err := s.UserNamespaces(""); ok || err != nil || s.RecursiveReadOnlyMounts("") || s.SupplementalGroupsPolicy() {
		t.Fatalf("empty store: userns %v %v", ok, err)
	}
	s.Observe(Report{})
	if ok, err := s.UserNamespaces("runc"); ok || err != nil {
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

// The node reports handlers and features as upstream: an empty handler list and no features
// for a runtime that sent none (containerd 1.6), each handler's two features otherwise.
func TestNodeStatus(t *testing.T) {
	s := &Store{}
	s.Observe(Report{})
	if handlers, features := s.NodeStatus(); len(handlers) != 0 || handlers == nil || features != nil {
		t.Fatalf("runtime reporting nothing: %v %v", handlers, features)
	}
	s.Observe(Report{Features: true, Handlers: []Handler{{Name: "runc", UserNamespaces: true}}})
	handlers, features := s.NodeStatus()
	if len(handlers) != 1 || handlers[0].Name != "runc" || !*handlers[0].Features.UserNamespaces ||
		*handlers[0].Features.RecursiveReadOnlyMounts || features == nil || *features.SupplementalGroupsPolicy {
		t.Fatalf("runtime reporting runc with user namespaces: %+v %+v", handlers, features)
	}
}
