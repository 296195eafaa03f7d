// Package kubeclienttest adapts a client-go clientset (in tests, k8s.io/client-go/kubernetes/fake)
// to kubeclient.Interface. Only tests import it: production code must not link the full
// clientset.
package kubeclienttest

import (
	"reflect"

	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// FromClientset returns cs as a kubeclient.Interface; nil (also a typed nil) stays nil.
func FromClientset(cs kubernetes.Interface) kubeclient.Interface {
	if cs == nil || reflect.ValueOf(cs).IsNil() {
		return nil
	}
	return &clientset{cs}
}

type clientset struct{ cs kubernetes.Interface }

func (c *clientset) CoreV1() kubeclient.CoreV1Interface { return coreV1{c.cs} }
func (c *clientset) CoordinationV1() kubeclient.CoordinationV1Interface {
	return coordinationV1{c.cs}
}
func (c *clientset) AuthenticationV1() kubeclient.AuthenticationV1Interface {
	return authenticationV1{c.cs}
}
func (c *clientset) AuthorizationV1() kubeclient.AuthorizationV1Interface {
	return authorizationV1{c.cs}
}
func (c *clientset) NodeV1() kubeclient.NodeV1Interface { return nodeV1{c.cs} }
func (c *clientset) CertificatesV1() kubeclient.CertificatesV1Interface {
	return certificatesV1{c.cs}
}
func (c *clientset) StorageV1() kubeclient.StorageV1Interface { return storageV1{c.cs} }
func (c *clientset) ResourceV1beta1() kubeclient.ResourceV1beta1Interface {
	return resourceV1beta1{c.cs}
}

type resourceV1beta1 struct{ cs kubernetes.Interface }

func (c resourceV1beta1) ResourceClaims(ns string) kubeclient.ResourceClaimInterface {
	return c.cs.ResourceV1beta1().ResourceClaims(ns)
}
func (c resourceV1beta1) ResourceSlices() kubeclient.ResourceSliceInterface {
	return c.cs.ResourceV1beta1().ResourceSlices()
}

type coreV1 struct{ cs kubernetes.Interface }

func (c coreV1) Pods(ns string) kubeclient.PodInterface     { return c.cs.CoreV1().Pods(ns) }
func (c coreV1) Nodes() kubeclient.NodeInterface            { return c.cs.CoreV1().Nodes() }
func (c coreV1) Events(ns string) kubeclient.EventInterface { return c.cs.CoreV1().Events(ns) }
func (c coreV1) ConfigMaps(ns string) kubeclient.ConfigMapInterface {
	return c.cs.CoreV1().ConfigMaps(ns)
}
func (c coreV1) Secrets(ns string) kubeclient.SecretInterface   { return c.cs.CoreV1().Secrets(ns) }
func (c coreV1) Services(ns string) kubeclient.ServiceInterface { return c.cs.CoreV1().Services(ns) }
func (c coreV1) PersistentVolumeClaims(ns string) kubeclient.PersistentVolumeClaimInterface {
	return c.cs.CoreV1().PersistentVolumeClaims(ns)
}
func (c coreV1) PersistentVolumes() kubeclient.PersistentVolumeInterface {
	return c.cs.CoreV1().PersistentVolumes()
}
func (c coreV1) ServiceAccounts(ns string) kubeclient.ServiceAccountInterface {
	return c.cs.CoreV1().ServiceAccounts(ns)
}

type coordinationV1 struct{ cs kubernetes.Interface }

func (c coordinationV1) Leases(ns string) kubeclient.LeaseInterface {
	return c.cs.CoordinationV1().Leases(ns)
}

type authenticationV1 struct{ cs kubernetes.Interface }

func (c authenticationV1) TokenReviews() kubeclient.TokenReviewInterface {
	return c.cs.AuthenticationV1().TokenReviews()
}

type authorizationV1 struct{ cs kubernetes.Interface }

func (c authorizationV1) SubjectAccessReviews() kubeclient.SubjectAccessReviewInterface {
	return c.cs.AuthorizationV1().SubjectAccessReviews()
}

type nodeV1 struct{ cs kubernetes.Interface }

func (c nodeV1) RuntimeClasses() kubeclient.RuntimeClassInterface {
	return c.cs.NodeV1().RuntimeClasses()
}

type certificatesV1 struct{ cs kubernetes.Interface }

func (c certificatesV1) CertificateSigningRequests() kubeclient.CertificateSigningRequestInterface {
	return c.cs.CertificatesV1().CertificateSigningRequests()
}

type storageV1 struct{ cs kubernetes.Interface }

func (c storageV1) CSINodes() kubeclient.CSINodeInterface { return c.cs.StorageV1().CSINodes() }
func (c storageV1) CSIDrivers() kubeclient.CSIDriverInterface {
	return c.cs.StorageV1().CSIDrivers()
}
func (c storageV1) VolumeAttachments() kubeclient.VolumeAttachmentInterface {
	return c.cs.StorageV1().VolumeAttachments()
}
