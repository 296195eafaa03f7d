// Package runtimefeatures keeps what the container runtime last reported it can do (CRI
// Status: runtime_handlers[].features and features), so that the runtime manager and pod
// admission can refuse a pod field the runtime would silently ignore.
package runtimefeatures

import (
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Handler is one runtime handler (a RuntimeClass's handler; "" is the runtime's default) and
// the features the runtime reports for it.
type Handler struct {
	Name                    string
	UserNamespaces          bool
	RecursiveReadOnlyMounts bool
}

// Report is one CRI Status answer's features.
type Report struct {
	// Handlers is empty when the runtime is too old to list them (containerd 1.6).
	Handlers []Handler
	// Features says the runtime sent runtime-wide features at all (containerd 1.6 does not).
	Features                 bool
	SupplementalGroupsPolicy bool
}

// Store holds the latest Report. The zero value knows nothing: every feature is unsupported
// until Observe is called, as upstream treats a runtime that has not answered yet.
type Store struct {
	mu     sync.RWMutex
	report Report
	// name and version are CRI Version's runtime_name and runtime_version.
	name, version string
}

// Observe replaces what the runtime reported.
func (s *Store) Observe(r Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report = r
	s.report.Handlers = slices.Clone(r.Handlers)
}

// Handlers returns the reported handlers.
func (s *Store) Handlers() []Handler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.report.Handlers)
}

// NodeStatus is what the node reports of them, as upstream: status.runtimeHandlers (empty
// when the runtime lists none) and status.features (nil when the runtime sent none).
func (s *Store) NodeStatus() ([]v1.NodeRuntimeHandler, *v1.NodeFeatures) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	handlers := make([]v1.NodeRuntimeHandler, 0, len(s.report.Handlers))
	for _, h := range s.report.Handlers {
		handlers = append(handlers, v1.NodeRuntimeHandler{Name: h.Name, Features: &v1.NodeRuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: ptr.To(h.RecursiveReadOnlyMounts), UserNamespaces: ptr.To(h.UserNamespaces),
		}})
	}
	if !s.report.Features {
		return handlers, nil
	}
	return handlers, &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(s.report.SupplementalGroupsPolicy)}
}

// SupplementalGroupsPolicy says whether the runtime can apply supplementalGroupsPolicy Strict.
func (s *Store) SupplementalGroupsPolicy() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.report.SupplementalGroupsPolicy
}

// UserNamespaces says whether handler supports user namespaces. A runtime that lists no
// handlers supports none; a handler it does not list is an error, as upstream.
func (s *Store) UserNamespaces(handler string) (bool, error) {
	h, listed, err := s.handler(handler)
	if !listed {
		return false, err
	}
	return h.UserNamespaces, nil
}

// RecursiveReadOnlyMounts says whether handler supports recursive read-only mounts; an
// unknown handler does not.
func (s *Store) RecursiveReadOnlyMounts(handler string) bool {
	h, _, _ := s.handler(handler)
	return h.RecursiveReadOnlyMounts
}

func (s *Store) handler(name string) (Handler, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.report.Handlers) == 0 {
		return Handler{}, false, nil
	}
	for _, h := range s.report.Handlers {
		if h.Name == name {
			return h, true, nil
		}
	}
	return Handler{}, false, fmt.Errorf("the handler %q is not known", name)
}
